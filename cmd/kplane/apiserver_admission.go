package main

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kplane/kplane/pkg/admission"
	"github.com/kplane/kplane/pkg/apiserver"
)

// admissionOptions are the admission flags of `kplane apiserver` (and
// `kplane up`), as kube-apiserver's.
type admissionOptions struct {
	enable, disable       []string
	notReadyToleration    int64
	unreachableToleration int64
}

func (o *admissionOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringSliceVar(&o.enable, "enable-admission-plugins", nil,
		"admission plugins to enable beside the default ones ("+strings.Join(admission.DefaultOnPlugins, ", ")+"); known: "+strings.Join(admission.OrderedPlugins, ", ")+". They run in kube-apiserver's order whatever the order given")
	f.StringSliceVar(&o.disable, "disable-admission-plugins", nil, "admission plugins to disable, default ones included")
	f.Int64Var(&o.notReadyToleration, "default-not-ready-toleration-seconds", 300, "tolerationSeconds of the notReady:NoExecute toleration DefaultTolerationSeconds gives every pod without one")
	f.Int64Var(&o.unreachableToleration, "default-unreachable-toleration-seconds", 300, "tolerationSeconds of the unreachable:NoExecute toleration DefaultTolerationSeconds gives every pod without one")
}

// apply configures cfg's admission chain.
func (o *admissionOptions) apply(cfg *apiserver.Config) error {
	if _, err := admission.Enabled(o.enable, o.disable); err != nil {
		return err
	}
	enable := o.enable
	if !slices.Contains(o.disable, admission.ServiceAccount) && !slices.Contains(enable, admission.ServiceAccount) {
		// On by default, as in kube-apiserver (the controllers of kplane
		// up make the default ServiceAccounts it needs).
		enable = append(slices.Clone(enable), admission.ServiceAccount)
	}
	cfg.Admission = apiserver.AdmissionConfig{
		Enable: enable, Disable: o.disable,
		DefaultNotReadyTolerationSeconds:    o.notReadyToleration,
		DefaultUnreachableTolerationSeconds: o.unreachableToleration,
	}
	return nil
}
