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
	checks, latency, err := registerChecks(reg, "validating_admission_policy",
		[]string{"policy", "policy_binding", "error_type", "enforcement_action"},
		"Validations of admission policies that failed or erred, by policy, binding, error type and the action taken (allow, deny, warn or audit).",
		"Time the validation expressions counted by check_total took, in seconds, with its labels.")
	if err != nil {
		return nil, err
	}
	return &metrics{checks: checks, latency: latency}, nil
}

// registerChecks registers (or finds) a policy plugin's check_total and
// check_duration_seconds in subsystem, with labels.
func registerChecks(reg prometheus.Registerer, subsystem string, labels []string, checkHelp, latencyHelp string) (*prometheus.CounterVec, *prometheus.HistogramVec, error) {
	checks, err := registerOrReuse(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "apiserver",
		Subsystem: subsystem,
		Name:      "check_total",
		Help:      checkHelp,
	}, labels))
	if err != nil {
		return nil, nil, err
	}
	latency, err := registerOrReuse(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "apiserver",
		Subsystem: subsystem,
		Name:      "check_duration_seconds",
		Help:      latencyHelp,
		// Kubernetes' buckets
		Buckets: []float64{0.0000005, 0.001, 0.01, 0.1, 1.0},
	}, labels))
	if err != nil {
		return nil, nil, err
	}
	return checks, latency, nil
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
	return zero, fmt.Errorf("registering admission policy metrics: %w", err)
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
	if !d.deny && !d.evalErr {
		return errorTypeNone
	}
	return errorTypeOf(d.message)
}

// errorTypeOf classifies an error message.
func errorTypeOf(msg string) string {
	switch {
	case strings.HasPrefix(msg, "compilation"):
		return errorTypeCompile
	case strings.Contains(msg, "running out of cost budget"), strings.Contains(msg, "runtime cost could not be calculated"):
		return errorTypeOutOfBudget
	}
	return errorTypeInvalid
}

// since is how long ago start was, zero without metrics (time is only
// read when it is recorded).
func (e *engine) since(start time.Time) time.Duration {
	if !e.timed {
		return 0
	}
	return e.clock.Since(start)
}

func (e *engine) now() time.Time {
	if !e.timed {
		return time.Time{}
	}
	return e.clock.Now()
}
