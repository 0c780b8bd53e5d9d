package workqueue

import "github.com/prometheus/client_golang/prometheus"

// PrometheusMetrics is a MetricsProvider that exports queue metrics to
// Prometheus under the names Kubernetes uses, each labelled with the queue's
// name:
//
//	workqueue_depth                              gauge
//	workqueue_adds_total                         counter
//	workqueue_queue_duration_seconds             histogram
//	workqueue_work_duration_seconds              histogram
//	workqueue_unfinished_work_seconds            gauge
//	workqueue_longest_running_processor_seconds  gauge
//	workqueue_retries_total                      counter
//
// It is a prometheus.Collector: register it once with a registry, then pass
// it as Config.Metrics to any number of queues. Queues sharing a name share
// the series. It is safe for concurrent use.
type PrometheusMetrics struct {
	depth        *prometheus.GaugeVec
	adds         *prometheus.CounterVec
	latency      *prometheus.HistogramVec
	workDuration *prometheus.HistogramVec
	unfinished   *prometheus.GaugeVec
	longest      *prometheus.GaugeVec
	retries      *prometheus.CounterVec
}

var (
	_ MetricsProvider      = (*PrometheusMetrics)(nil)
	_ prometheus.Collector = (*PrometheusMetrics)(nil)
)

// PrometheusConfig configures PrometheusMetrics.
type PrometheusConfig struct {
	// Registerer, if set, gets the metrics registered with it. Nil leaves
	// registering to the caller.
	Registerer prometheus.Registerer
}

// NewPrometheusMetrics returns a PrometheusMetrics, registered with
// cfg.Registerer if one is given. It fails if registering fails, for example
// because the registry already holds workqueue metrics.
func NewPrometheusMetrics(cfg PrometheusConfig) (*PrometheusMetrics, error) {
	const subsystem = "workqueue"
	labels := []string{"name"}
	// From 10ns to 10s, one bucket per power of ten, as Kubernetes does.
	buckets := prometheus.ExponentialBuckets(10e-9, 10, 10)
	m := &PrometheusMetrics{
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: subsystem, Name: "depth",
			Help: "Current number of items waiting in the work queue to be processed.",
		}, labels),
		adds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: subsystem, Name: "adds_total",
			Help: "Total number of adds that made an item need processing.",
		}, labels),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "queue_duration_seconds",
			Help:    "Seconds an item stays in the work queue before a worker takes it.",
			Buckets: buckets,
		}, labels),
		workDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "work_duration_seconds",
			Help:    "Seconds a worker spends processing an item.",
			Buckets: buckets,
		}, labels),
		unfinished: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: subsystem, Name: "unfinished_work_seconds",
			Help: "Seconds of work done so far on the items being processed; a value that keeps growing hints at stuck workers.",
		}, labels),
		longest: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: subsystem, Name: "longest_running_processor_seconds",
			Help: "Seconds the longest-running item in progress has been processed for.",
		}, labels),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: subsystem, Name: "retries_total",
			Help: "Total number of delayed and rate-limited adds.",
		}, labels),
	}
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(m); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *PrometheusMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.depth, m.adds, m.latency, m.workDuration, m.unfinished, m.longest, m.retries}
}

// Describe implements prometheus.Collector.
func (m *PrometheusMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (m *PrometheusMetrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.collectors() {
		c.Collect(ch)
	}
}

// NewDepthMetric implements MetricsProvider.
func (m *PrometheusMetrics) NewDepthMetric(name string) GaugeMetric {
	return m.depth.WithLabelValues(name)
}

// NewAddsMetric implements MetricsProvider.
func (m *PrometheusMetrics) NewAddsMetric(name string) CounterMetric {
	return m.adds.WithLabelValues(name)
}

// NewLatencyMetric implements MetricsProvider.
func (m *PrometheusMetrics) NewLatencyMetric(name string) HistogramMetric {
	return m.latency.WithLabelValues(name)
}

// NewWorkDurationMetric implements MetricsProvider.
func (m *PrometheusMetrics) NewWorkDurationMetric(name string) HistogramMetric {
	return m.workDuration.WithLabelValues(name)
}

// NewUnfinishedWorkSecondsMetric implements MetricsProvider.
func (m *PrometheusMetrics) NewUnfinishedWorkSecondsMetric(name string) SettableGaugeMetric {
	return m.unfinished.WithLabelValues(name)
}

// NewLongestRunningProcessorSecondsMetric implements MetricsProvider.
func (m *PrometheusMetrics) NewLongestRunningProcessorSecondsMetric(name string) SettableGaugeMetric {
	return m.longest.WithLabelValues(name)
}

// NewRetriesMetric implements MetricsProvider.
func (m *PrometheusMetrics) NewRetriesMetric(name string) CounterMetric {
	return m.retries.WithLabelValues(name)
}
