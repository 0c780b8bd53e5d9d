package webhook

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The error_type label values of apiserver_admission_webhook_rejection_count,
// as Kubernetes names them.
const (
	rejectionCallingWebhook = "calling_webhook_error"
	rejectionInternal       = "apiserver_internal_error"
	rejectionNone           = "no_error"
)

// The type label values: Kubernetes says "admit" for mutating webhooks and
// "validating" for validating ones.
const (
	typeAdmit      = "admit"
	typeValidating = "validating"
)

// Metrics are the webhook metrics of kube-apiserver, with its names and
// labels. Both plugins of one server share them (NewMetrics called twice
// on one registry returns collectors backed by the same series). A nil
// *Metrics records nothing. Safe for concurrent use.
type Metrics struct {
	duration   *prometheus.HistogramVec
	rejections *prometheus.CounterVec
	requests   *prometheus.CounterVec
	failOpen   *prometheus.CounterVec
}

// NewMetrics registers the webhook metrics on reg and returns them; a nil
// reg returns nil (no metrics). A metric reg already has, from an earlier
// call, is reused rather than registered again.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &Metrics{}
	var err error
	if m.duration, err = register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "apiserver",
		Subsystem: "admission",
		Name:      "webhook_admission_duration_seconds",
		Help:      "Time an admission webhook took to answer, in seconds, by webhook name, type (admit or validating), operation and whether it rejected the request.",
		Buckets:   []float64{0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10, 25},
	}, []string{"name", "type", "operation", "rejected"})); err != nil {
		return nil, err
	}
	if m.rejections, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "apiserver",
		Subsystem: "admission",
		Name:      "webhook_rejection_count",
		Help:      "Requests an admission webhook made fail, by webhook name, type, operation, error type (calling_webhook_error, apiserver_internal_error or no_error for a denial) and the rejection's HTTP code (at most 600).",
	}, []string{"name", "type", "operation", "error_type", "rejection_code"})); err != nil {
		return nil, err
	}
	if m.requests, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "apiserver",
		Subsystem: "admission",
		Name:      "webhook_request_total",
		Help:      "Calls of admission webhooks, by webhook name, type, operation, HTTP code (at most 600) and whether the request was rejected.",
	}, []string{"name", "type", "operation", "code", "rejected"})); err != nil {
		return nil, err
	}
	if m.failOpen, err = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "apiserver",
		Subsystem: "admission",
		Name:      "webhook_fail_open_count",
		Help:      "Admission webhook calls that failed and were ignored (failurePolicy Ignore), by webhook name and type.",
	}, []string{"name", "type"})); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c on reg, or returns the collector of the same
// description reg already has.
func register[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(T); ok {
			return existing, nil
		}
	}
	var zero T
	return zero, fmt.Errorf("register webhook metrics: %w", err)
}

// capCode keeps the code label bounded, as Kubernetes does.
func capCode(code int) string {
	if code > 600 {
		code = 600
	}
	return strconv.Itoa(code)
}

// observe records one webhook call.
func (m *Metrics) observe(name, typ, op string, elapsed time.Duration, rejected bool, code int) {
	if m == nil {
		return
	}
	r := strconv.FormatBool(rejected)
	m.requests.WithLabelValues(name, typ, op, capCode(code), r).Inc()
	m.duration.WithLabelValues(name, typ, op, r).Observe(elapsed.Seconds())
}

// reject records a webhook call that made the request fail.
func (m *Metrics) reject(name, typ, op, errorType string, code int) {
	if m == nil {
		return
	}
	m.rejections.WithLabelValues(name, typ, op, errorType, capCode(code)).Inc()
}

// failedOpen records a failed call ignored by failurePolicy Ignore.
func (m *Metrics) failedOpen(name, typ string) {
	if m == nil {
		return
	}
	m.failOpen.WithLabelValues(name, typ).Inc()
}
