package workqueue

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/utils/clock"
)

// DefaultMetricsUpdatePeriod is how often a queue with metrics refreshes the
// unfinished-work and longest-running-processor gauges, unless
// Config.MetricsUpdatePeriod says otherwise.
const DefaultMetricsUpdatePeriod = 500 * time.Millisecond

// Config configures every kind of queue. The zero value is a valid
// configuration: an unnamed queue on the real clock without metrics.
type Config struct {
	// Name labels the queue's metrics. Required when Metrics is set.
	Name string
	// Metrics receives the queue's metrics. Nil means no metrics, at no cost.
	Metrics MetricsProvider
	// Clock drives delays and metric timings. Nil means the real clock;
	// tests pass a fake clock (k8s.io/utils/clock/testing) and step it.
	Clock clock.Clock
	// MetricsUpdatePeriod is how often the unfinished-work gauges are
	// refreshed when Metrics is set. Zero means DefaultMetricsUpdatePeriod;
	// negative is an error.
	MetricsUpdatePeriod time.Duration
}

// RateLimitingConfig configures a RateLimitingQueue.
type RateLimitingConfig[T comparable] struct {
	Config
	// RateLimiter spaces AddRateLimited retries. Nil means
	// DefaultControllerRateLimiter, its token bucket on Config.Clock.
	RateLimiter RateLimiter[T]
}

// PriorityConfig configures a PriorityQueue.
type PriorityConfig[T comparable] struct {
	Config
	// RateLimiter spaces AddRateLimited retries and AddOpts.RateLimited adds.
	// Nil means DefaultControllerRateLimiter, its token bucket on
	// Config.Clock.
	RateLimiter RateLimiter[T]
}

// withDefaults validates c and fills in its defaults.
func (c Config) withDefaults() (Config, error) {
	if c.Metrics != nil && c.Name == "" {
		return c, errors.New("workqueue: a queue with a metrics provider needs a name")
	}
	if c.MetricsUpdatePeriod < 0 {
		return c, fmt.Errorf("workqueue: metrics update period must not be negative, got %v", c.MetricsUpdatePeriod)
	}
	if c.MetricsUpdatePeriod == 0 {
		c.MetricsUpdatePeriod = DefaultMetricsUpdatePeriod
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	return c, nil
}
