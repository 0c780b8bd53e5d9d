package main

import (
	"slices"
	"testing"

	"github.com/kplane/kplane/pkg/admission"
	"github.com/kplane/kplane/pkg/apiserver"
)

func TestAdmissionFlagsEnableServiceAccountAsKubeAPIServer(t *testing.T) {
	for _, tc := range []struct {
		name            string
		opts            admissionOptions
		enable, disable []string
		err             bool
	}{
		{name: "defaults", enable: []string{admission.ServiceAccount}},
		{name: "disabled", opts: admissionOptions{disable: []string{admission.ServiceAccount}}, disable: []string{admission.ServiceAccount}},
		{name: "others", opts: admissionOptions{enable: []string{admission.AlwaysDeny}}, enable: []string{admission.AlwaysDeny, admission.ServiceAccount}},
		{name: "unknown", opts: admissionOptions{enable: []string{"Nope"}}, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cfg apiserver.Config
			err := tc.opts.apply(&cfg)
			if (err != nil) != tc.err {
				t.Fatalf("apply = %v, want error %v", err, tc.err)
			}
			if tc.err {
				return
			}
			if !slices.Equal(cfg.Admission.Enable, tc.enable) || !slices.Equal(cfg.Admission.Disable, tc.disable) {
				t.Fatalf("enable %v disable %v, want %v %v", cfg.Admission.Enable, cfg.Admission.Disable, tc.enable, tc.disable)
			}
		})
	}
}
