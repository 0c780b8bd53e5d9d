package leaderelection

import "github.com/prometheus/client_golang/prometheus"

type noopMetrics struct{}

func (noopMetrics) NewLeaderMetric(string) LeaderMetric { return noopMetrics{} }
func (noopMetrics) On()                                 {}
func (noopMetrics) Off()                                {}

// PrometheusMetrics is a MetricsProvider exporting the gauge Kubernetes
// components export, labelled with the elector's name:
//
//	leader_election_master_status{name}  1 while leading, 0 otherwise
//
// It is a prometheus.Collector: register it once, then pass it as
// Config.Metrics to any number of electors. It is safe for concurrent use.
type PrometheusMetrics struct {
	status *prometheus.GaugeVec
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
// cfg.Registerer if one is given; it fails if registering fails.
func NewPrometheusMetrics(cfg PrometheusConfig) (*PrometheusMetrics, error) {
	m := &PrometheusMetrics{status: prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "leader_election_master_status",
		Help: "Whether this process leads the named election: 1 while leading, 0 otherwise.",
	}, []string{"name"})}
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(m); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// NewLeaderMetric returns the series of the elector called name.
func (m *PrometheusMetrics) NewLeaderMetric(name string) LeaderMetric {
	return gauge{m.status.WithLabelValues(name)}
}

// Describe implements prometheus.Collector.
func (m *PrometheusMetrics) Describe(ch chan<- *prometheus.Desc) { m.status.Describe(ch) }

// Collect implements prometheus.Collector.
func (m *PrometheusMetrics) Collect(ch chan<- prometheus.Metric) { m.status.Collect(ch) }

type gauge struct{ g prometheus.Gauge }

func (g gauge) On()  { g.g.Set(1) }
func (g gauge) Off() { g.g.Set(0) }
