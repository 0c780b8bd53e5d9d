package workqueue

import "time"

// Interface is a deduplicating FIFO work queue of items of type T. All
// methods are safe for concurrent use by any number of producers and
// consumers. See the package documentation for the guarantees.
type Interface[T comparable] interface {
	// Add marks item as needing processing. It never blocks on consumers.
	// Adding an item that is already waiting to be processed is a no-op;
	// adding an item that is being processed makes it be processed once more
	// after Done. Add after ShutDown is ignored.
	Add(item T)
	// Get blocks until an item is ready and hands it to the caller, who must
	// call Done with it when finished. It returns shutdown=true, and the zero
	// T, once the queue is shut down and holds no ready item.
	Get() (item T, shutdown bool)
	// Done marks item as processed. If item was added while it was being
	// processed, it is queued again. Done for an item that is not being
	// processed is a no-op.
	Done(item T)
	// Len reports how many items are ready and waiting for a Get. It is for
	// information only: by the time it returns the value may have changed.
	Len() int
	// ShutDown makes the queue ignore further adds and wakes every blocked
	// Get. Items already ready are still handed out; once none are left Get
	// reports shutdown. Items waiting for a delay are dropped. ShutDown is
	// idempotent, stops the queue's internal goroutine and waits for it to
	// exit. Calling it while ShutDownWithDrain waits ends that wait.
	ShutDown()
	// ShutDownWithDrain shuts the queue down like ShutDown and then blocks
	// until no item handed out by Get is still waiting for its Done, as
	// client-go's does: items ready but not yet taken (including one that
	// Done re-queues) do not hold it, so a shutdown whose workers have
	// already stopped returns at once. Consumers that keep calling Get still
	// get the ready items until it reports shutdown.
	ShutDownWithDrain()
	// ShuttingDown reports whether ShutDown or ShutDownWithDrain was called.
	ShuttingDown() bool
}

// DelayingInterface is an Interface that can add an item after a delay, so a
// failing item can be retried later instead of in a hot loop.
type DelayingInterface[T comparable] interface {
	Interface[T]
	// AddAfter adds item once d has passed on the queue's clock. d <= 0 adds
	// it at once. As in client-go, the delayed add is kept apart from the
	// item's other adds: an item already waiting keeps the earlier of its
	// two ready times, while one already ready or being processed is added
	// again when d has passed unless it is then still ready (an Add
	// meanwhile does not cancel it). The PriorityQueue instead keeps one
	// pending add per item, as controller-runtime's. It never blocks.
	AddAfter(item T, d time.Duration)
}

// RateLimitingInterface is a DelayingInterface whose retries are spaced by a
// RateLimiter. It is the queue controllers consume: both *RateLimitingQueue
// and *PriorityQueue implement it, so a controller accepts either.
type RateLimitingInterface[T comparable] interface {
	DelayingInterface[T]
	// AddRateLimited adds item after the delay the rate limiter asks for,
	// counting one more failure for it.
	AddRateLimited(item T)
	// Forget tells the rate limiter to stop tracking item: its failure count
	// goes back to zero. It does not remove item from the queue; the caller
	// still calls Done.
	Forget(item T)
	// NumRequeues reports how many failures the rate limiter counts for item.
	NumRequeues(item T) int
}

// PriorityInterface is a RateLimitingInterface whose ready items are handed
// out highest priority first, FIFO within a priority.
type PriorityInterface[T comparable] interface {
	RateLimitingInterface[T]
	// AddWithOpts adds every item with the given options. For an item
	// already in the queue the highest priority and the earliest ready time
	// win.
	AddWithOpts(opts AddOpts, items ...T)
	// GetWithPriority is Get that also reports the priority the item was
	// queued with.
	GetWithPriority() (item T, priority int, shutdown bool)
}

// AddOpts are the options of PriorityQueue.AddWithOpts.
type AddOpts struct {
	// After delays the item like AddAfter. Zero or negative adds it at once.
	After time.Duration
	// RateLimited asks the rate limiter for a delay, counting a failure. When
	// After is also positive, the shorter of the two delays is used, in line
	// with "the earliest ready time wins".
	RateLimited bool
	// Priority orders ready items: higher first. The zero value is the
	// priority of a plain Add; controllers commonly use a negative value for
	// initial-list and resync events.
	Priority int
}

// RateLimiter decides how long an item waits before it is retried. A
// RateLimiter must be safe for concurrent use.
type RateLimiter[T comparable] interface {
	// When records one more failure for item and returns how long it should
	// wait before the next attempt.
	When(item T) time.Duration
	// Forget drops what the limiter tracks for item, resetting its failures.
	Forget(item T)
	// NumRequeues reports how many failures are recorded for item.
	NumRequeues(item T) int
}

// MetricsProvider creates the metrics of a named queue. The queue calls the
// New methods once, in its constructor. It updates the metrics mostly while
// holding its lock, so they must be cheap, safe for concurrent use, and must
// not call back into the queue.
type MetricsProvider interface {
	// NewDepthMetric: items added and not yet handed out by Get.
	NewDepthMetric(name string) GaugeMetric
	// NewAddsMetric: adds that made an item need processing.
	NewAddsMetric(name string) CounterMetric
	// NewLatencyMetric: seconds an item waited between its add and its Get.
	NewLatencyMetric(name string) HistogramMetric
	// NewWorkDurationMetric: seconds between Get and Done.
	NewWorkDurationMetric(name string) HistogramMetric
	// NewUnfinishedWorkSecondsMetric: total seconds spent so far on the
	// items being processed now; a growing value hints at stuck workers.
	NewUnfinishedWorkSecondsMetric(name string) SettableGaugeMetric
	// NewLongestRunningProcessorSecondsMetric: seconds the longest-running
	// item being processed now has been processed for.
	NewLongestRunningProcessorSecondsMetric(name string) SettableGaugeMetric
	// NewRetriesMetric: delayed and rate-limited adds.
	NewRetriesMetric(name string) CounterMetric
}

// GaugeMetric is a value that goes up and down.
type GaugeMetric interface {
	Inc()
	Dec()
}

// SettableGaugeMetric is a gauge that is set to a value.
type SettableGaugeMetric interface {
	Set(float64)
}

// CounterMetric is a value that only goes up.
type CounterMetric interface {
	Inc()
}

// HistogramMetric records observations.
type HistogramMetric interface {
	Observe(float64)
}
