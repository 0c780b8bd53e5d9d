package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kplane/kplane/pkg/apiserver"
)

func TestServingFlagsDefaultsAsKubeAPIServer(t *testing.T) {
	c := newAPIServerCommand()
	for flag, want := range map[string]string{
		"max-requests-inflight":          "400",
		"max-mutating-requests-inflight": "200",
		"request-timeout":                "1m0s",
		"insecure-http":                  "false",
		"audit-log-maxsize":              "100",
	} {
		f := c.Flags().Lookup(flag)
		if f == nil || f.DefValue != want {
			t.Errorf("--%s: %v, want default %s", flag, f, want)
		}
	}
	if up := newUpCommand(); up.Flags().Lookup("audit-policy-file") == nil || up.Flags().Lookup("tls-san") == nil {
		t.Error("kplane up lacks the serving flags")
	}
}

func TestServingOptionsApply(t *testing.T) {
	tests := []struct {
		name            string
		o               servingOptions
		wantRO, wantMut int
		wantTimeout     time.Duration
		wantErr         bool
	}{
		{"kube defaults", servingOptions{maxInFlight: 400, maxMutatingInFlight: 200, requestTimeout: time.Minute}, 400, 200, time.Minute, false},
		{"zero is no limit", servingOptions{}, -1, -1, -1, false},
		{"negative refused", servingOptions{maxInFlight: -1}, 0, 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cfg apiserver.Config
			err := tt.o.apply(&cfg)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v", err)
			}
			if err == nil && (cfg.MaxRequestsInFlight != tt.wantRO || cfg.MaxMutatingRequestsInFlight != tt.wantMut || cfg.RequestTimeout != tt.wantTimeout) {
				t.Errorf("config %d %d %v", cfg.MaxRequestsInFlight, cfg.MaxMutatingRequestsInFlight, cfg.RequestTimeout)
			}
		})
	}
}

func TestServingOptionsAuditor(t *testing.T) {
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	if a, closeFn, err := (&servingOptions{}).auditor(log); a != nil || err != nil {
		t.Fatalf("no flags: %v %v", a, err)
	} else {
		closeFn()
	}
	for _, o := range []servingOptions{{auditLogPath: filepath.Join(dir, "a.log")}, {auditPolicyFile: policy}} {
		if _, _, err := o.auditor(log); err == nil || !strings.Contains(err.Error(), "go together") {
			t.Errorf("%+v: %v", o, err)
		}
	}
	o := servingOptions{auditLogPath: filepath.Join(dir, "logs", "audit.log"), auditPolicyFile: policy, auditMaxSizeMB: 1}
	a, closeFn, err := o.auditor(log)
	if err != nil || a == nil {
		t.Fatalf("%v %v", a, err)
	}
	closeFn()
	if fi, err := os.Stat(o.auditLogPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("audit log %v", err)
	}
	bad := servingOptions{auditLogPath: "-", auditPolicyFile: filepath.Join(dir, "missing.yaml")}
	if _, _, err := bad.auditor(log); err == nil {
		t.Error("missing policy accepted")
	}
}

func TestInsecureHTTPExcludesTLSFlags(t *testing.T) {
	o := servingOptions{insecureHTTP: true, tls: true, certFile: "x"}
	if _, _, err := o.transport(t.TempDir(), "127.0.0.1", 6443, "", slog.New(slog.DiscardHandler)); err == nil {
		t.Error("--insecure-http with --tls-cert-file accepted")
	}
	o = servingOptions{tls: false}
	tc, creds, err := o.transport(t.TempDir(), "127.0.0.1", 6443, "", slog.New(slog.DiscardHandler))
	if err != nil || tc != nil || creds != nil {
		t.Errorf("deprecated --tls=false must serve plain HTTP: %v %v %v", tc, creds, err)
	}
}
