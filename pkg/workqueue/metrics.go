package workqueue

import "time"

// queueMetrics holds a queue's metrics. The engine calls its methods with
// its lock held, so the records' timestamps need no further guarding.
type queueMetrics struct {
	now          func() time.Duration // the engine's clock
	depth        GaugeMetric
	adds         CounterMetric
	latency      HistogramMetric
	workDuration HistogramMetric
	unfinished   SettableGaugeMetric
	longest      SettableGaugeMetric
	retries      CounterMetric
}

// newQueueMetrics returns nil when cfg asks for no metrics, which the engine
// checks so that a queue without metrics pays nothing for them.
func newQueueMetrics(cfg Config, now func() time.Duration) *queueMetrics {
	p := cfg.Metrics
	if p == nil {
		return nil
	}
	return &queueMetrics{
		now:          now,
		depth:        p.NewDepthMetric(cfg.Name),
		adds:         p.NewAddsMetric(cfg.Name),
		latency:      p.NewLatencyMetric(cfg.Name),
		workDuration: p.NewWorkDurationMetric(cfg.Name),
		unfinished:   p.NewUnfinishedWorkSecondsMetric(cfg.Name),
		longest:      p.NewLongestRunningProcessorSecondsMetric(cfg.Name),
		retries:      p.NewRetriesMetric(cfg.Name),
	}
}

// added: an item became dirty.
func added[T comparable](m *queueMetrics, r *rec[T]) {
	m.adds.Inc()
	m.depth.Inc()
	r.addedAt = m.now()
}

// started: a consumer got an item.
func started[T comparable](m *queueMetrics, r *rec[T]) {
	now := m.now()
	m.depth.Dec()
	m.latency.Observe((now - r.addedAt).Seconds())
	r.startedAt = now
}

// finished: a consumer called Done.
func finished[T comparable](m *queueMetrics, r *rec[T]) {
	m.workDuration.Observe((m.now() - r.startedAt).Seconds())
}

// retry: a delayed or rate-limited add.
func (m *queueMetrics) retry() {
	if m != nil {
		m.retries.Inc()
	}
}
