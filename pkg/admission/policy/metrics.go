package policy

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The enforcement_action label values, as Kubernetes names them.
const (
	actionAllow = "allow"
	actionDeny  = "deny"
	actionWarn  = "warn"
	actionAudit = "audit"
)

// The error_type label values, as Kubernetes names them.
const (
	errorTypeNone        = "no_error"
	errorTypeCompile     = "compile_error"
	errorTypeInvalid     = "invalid_error"
	errorTypeOutOfBudget = "out_of_budget"
)

// metrics are kube-apiserver's ValidatingAdmissionPolicy metrics. A nil
// *metrics records nothing; safe for concurrent use.
type metrics struct {
	checks  *prometheus.CounterVec
	latency *prometheus.HistogramVec
}

// newMetrics registers the metrics on reg (nil: none). Metrics reg already
// has from another plugin instance are shared.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	labels := []string{"policy", "policy_binding", "error_type", "enforcement_action"}
	checks, err := registerOrReuse(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "apiserver",
		Subsystem: "validating_admission_policy",
		Name:      "check_total",
		Help:      "Validations of admission policies that failed or erred, by policy, binding, error type and the action taken (allow, deny, warn or audit).",
	}, labels))
	if err != nil {
		return nil, err
	}
	latency, err := registerOrReuse(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "apiserver",
		Subsystem: "validating_admission_policy",
		Name:      "check_duration_seconds",
		Help:      "Time the validation expressions counted by check_total took, in seconds, with its labels.",
		// Kubernetes' buckets
		Buckets: []float64{0.0000005, 0.001, 0.01, 0.1, 1.0},
	}, labels))
	if err != nil {
		return nil, err
	}
	return &metrics{checks: checks, latency: latency}, nil
}

func registerOrReuse[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if prev, ok := already.ExistingCollector.(C); ok {
			return prev, nil
		}
	}
	var zero C
	return zero, fmt.Errorf("registering ValidatingAdmissionPolicy metrics: %w", err)
}

// observe records one decision acted on.
func (m *metrics) observe(policy, binding string, d decision, action string) {
	if m == nil {
		return
	}
	et := errorType(d)
	m.checks.WithLabelValues(policy, binding, et, action).Inc()
	m.latency.WithLabelValues(policy, binding, et, action).Observe(d.elapsed.Seconds())
}

// errorType classifies a decision as Kubernetes does, by its message: a
// plain failed validation counts as invalid_error there too.
func errorType(d decision) string {
	switch {
	case !d.deny && !d.evalErr:
		return errorTypeNone
	case strings.HasPrefix(d.message, "compilation"):
		return errorTypeCompile
	case strings.HasPrefix(d.message, "validation failed due to running out of cost budget"):
		return errorTypeOutOfBudget
	}
	return errorTypeInvalid
}

// since is how long ago start was, zero without metrics (time is only
// read when it is recorded).
func (v *Validating) since(start time.Time) time.Duration {
	if v.metrics == nil {
		return 0
	}
	return v.clock.Since(start)
}

func (v *Validating) now() time.Time {
	if v.metrics == nil {
		return time.Time{}
	}
	return v.clock.Now()
}
