package podsecurity

import (
	"errors"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kplane/kplane/pkg/admission"
)

// metrics are Kubernetes' Pod Security Admission counters. A nil
// *metrics records nothing.
type metrics struct {
	evaluations *prometheus.CounterVec
	errors      *prometheus.CounterVec
}

// newMetrics registers the counters with reg (nil: none). A counter reg
// already holds, from another plugin of the same process, is shared.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		evaluations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pod_security_evaluations_total",
			Help: "Number of policy evaluations that occurred, not counting ignored or exempt requests.",
		}, []string{"decision", "policy_level", "policy_version", "mode", "request_operation", "resource", "subresource"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pod_security_errors_total",
			Help: "Number of errors preventing normal evaluation. Non-fatal errors may result in the latest restricted profile being used for evaluation.",
		}, []string{"fatal", "request_operation", "resource", "subresource"}),
	}
	exemptions := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pod_security_exemptions_total",
		Help: "Number of exempt requests, not counting ignored or out of scope requests.",
	}, []string{"request_operation", "resource", "subresource"})
	for _, c := range []**prometheus.CounterVec{&m.evaluations, &m.errors, &exemptions} {
		if err := reg.Register(*c); err != nil {
			var already prometheus.AlreadyRegisteredError
			if !errors.As(err, &already) {
				return nil, err
			}
			existing, ok := already.ExistingCollector.(*prometheus.CounterVec)
			if !ok {
				return nil, err
			}
			*c = existing
		}
	}
	return m, nil
}

func resourceLabel(a *admission.Attributes) string {
	switch a.Resource.GroupResource() {
	case podsGR:
		return "pod"
	case namespacesGR:
		return "namespace"
	}
	return "controller"
}

// evaluation counts one decision of mode ("enforce", "audit", "warn").
func (m *metrics) evaluation(a *admission.Attributes, allowed bool, lv levelVersion, mode string) {
	if m == nil {
		return
	}
	decision := "deny"
	if allowed {
		decision = "allow"
	}
	v := lv.version.String()
	switch {
	case lv.version.latest || lv.level == Privileged:
		v = "latest"
	case lv.version.minor > latestMinor:
		v = "future"
	}
	m.evaluations.WithLabelValues(decision, string(lv.level), v, mode, strings.ToLower(string(a.Operation)), resourceLabel(a), a.Subresource).Inc()
}

// failed counts an error: fatal ones stop the evaluation.
func (m *metrics) failed(a *admission.Attributes, fatal bool) {
	if m == nil {
		return
	}
	m.errors.WithLabelValues(strconv.FormatBool(fatal), strings.ToLower(string(a.Operation)), resourceLabel(a), a.Subresource).Inc()
}
