package controller

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Results of a reconcile, the result label of controller_runtime_reconcile_total.
const (
	ResultSuccess = "success"
	ResultError   = "error"
)

// NoopMetrics discards everything; it is the default.
type NoopMetrics struct{}

var _ Metrics = NoopMetrics{}

// ObserveReconcile implements Metrics.
func (NoopMetrics) ObserveReconcile(string, string, time.Duration) {}

// IncTerminalErrors implements Metrics.
func (NoopMetrics) IncTerminalErrors(string) {}

// IncPanics implements Metrics.
func (NoopMetrics) IncPanics(string) {}

// IncDropped implements Metrics.
func (NoopMetrics) IncDropped(string) {}

// AddActiveWorkers implements Metrics.
func (NoopMetrics) AddActiveWorkers(string, int) {}

// SetMaxWorkers implements Metrics.
func (NoopMetrics) SetMaxWorkers(string, int) {}

// PrometheusMetricsConfig configures NewPrometheusMetrics.
type PrometheusMetricsConfig struct {
	// Registerer receives the collectors. Required.
	Registerer prometheus.Registerer
}

// PrometheusMetrics exports a Controller's metrics under the names
// controller-runtime uses, so existing dashboards work, each labelled with
// the controller's name:
//
//	controller_runtime_reconcile_total{controller,result}   counter
//	controller_runtime_reconcile_errors_total{controller}   counter (errors and panics)
//	controller_runtime_terminal_reconcile_errors_total{controller} counter
//	controller_runtime_reconcile_panics_total{controller}   counter
//	controller_runtime_reconcile_time_seconds{controller}   histogram
//	controller_runtime_active_workers{controller}           gauge
//	controller_runtime_max_concurrent_reconciles{controller} gauge
//
// plus kplane_controller_reconcile_dropped_total{controller}, the keys given
// up on after MaxRetries, which controller-runtime does not have.
//
// One PrometheusMetrics serves any number of controllers. It is safe for
// concurrent use.
type PrometheusMetrics struct {
	total, errors, terminal, panics, dropped *prometheus.CounterVec
	duration                                 *prometheus.HistogramVec
	active, maxWorkers                       *prometheus.GaugeVec
}

var _ Metrics = (*PrometheusMetrics)(nil)

// NewPrometheusMetrics creates the collectors and registers them.
func NewPrometheusMetrics(cfg PrometheusMetricsConfig) (*PrometheusMetrics, error) {
	if cfg.Registerer == nil {
		return nil, errors.New("prometheus metrics: registerer is required")
	}
	ctl := []string{"controller"}
	m := &PrometheusMetrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "controller_runtime_reconcile_total", Help: "Total number of reconciliations per controller.",
		}, []string{"controller", "result"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "controller_runtime_reconcile_errors_total", Help: "Total number of reconciliation errors per controller.",
		}, ctl),
		terminal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "controller_runtime_terminal_reconcile_errors_total", Help: "Total number of terminal reconciliation errors per controller.",
		}, ctl),
		panics: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "controller_runtime_reconcile_panics_total", Help: "Total number of reconciliation panics per controller.",
		}, ctl),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kplane_controller_reconcile_dropped_total", Help: "Total number of keys dropped after the maximum number of retries per controller.",
		}, ctl),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "controller_runtime_reconcile_time_seconds", Help: "Length of time per reconciliation per controller.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
				1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60},
		}, ctl),
		active: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "controller_runtime_active_workers", Help: "Number of currently used workers per controller.",
		}, ctl),
		maxWorkers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "controller_runtime_max_concurrent_reconciles", Help: "Maximum number of concurrent reconciles per controller.",
		}, ctl),
	}
	for _, c := range []prometheus.Collector{m.total, m.errors, m.terminal, m.panics, m.dropped, m.duration, m.active, m.maxWorkers} {
		if err := cfg.Registerer.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// ObserveReconcile implements Metrics.
func (m *PrometheusMetrics) ObserveReconcile(controller, result string, d time.Duration) {
	m.total.WithLabelValues(controller, result).Inc()
	if result == ResultError {
		m.errors.WithLabelValues(controller).Inc()
	}
	m.duration.WithLabelValues(controller).Observe(d.Seconds())
}

// IncTerminalErrors implements Metrics.
func (m *PrometheusMetrics) IncTerminalErrors(controller string) {
	m.terminal.WithLabelValues(controller).Inc()
}

// IncPanics implements Metrics.
func (m *PrometheusMetrics) IncPanics(controller string) { m.panics.WithLabelValues(controller).Inc() }

// IncDropped implements Metrics.
func (m *PrometheusMetrics) IncDropped(controller string) {
	m.dropped.WithLabelValues(controller).Inc()
}

// AddActiveWorkers implements Metrics.
func (m *PrometheusMetrics) AddActiveWorkers(controller string, delta int) {
	m.active.WithLabelValues(controller).Add(float64(delta))
}

// SetMaxWorkers implements Metrics.
func (m *PrometheusMetrics) SetMaxWorkers(controller string, n int) {
	m.maxWorkers.WithLabelValues(controller).Set(float64(n))
}
