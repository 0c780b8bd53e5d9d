package workqueue

// PriorityQueue is a RateLimitingQueue whose ready items are handed out
// highest priority first and FIFO within a priority. Re-adding an item keeps
// its highest priority and its earliest ready time; when an add raises the
// priority of a ready item, the item moves to the end of its new priority's
// FIFO. Add, AddAfter and AddRateLimited use priority 0. Deduplication, the
// processing set and shutdown behave exactly as in Queue, so a PriorityQueue
// can stand wherever a RateLimitingInterface is expected. It is safe for
// concurrent use. Create it with NewPriority and shut it down when done.
//
// Priorities are kept in a short list, so a queue that sees many distinct
// priority values at once pays time linear in their number per add.
type PriorityQueue[T comparable] struct {
	RateLimitingQueue[T]
}

var _ PriorityInterface[string] = (*PriorityQueue[string])(nil)

// NewPriority returns an empty PriorityQueue configured by cfg. It starts no
// goroutine.
func NewPriority[T comparable](cfg PriorityConfig[T]) (*PriorityQueue[T], error) {
	q := &PriorityQueue[T]{}
	if err := q.init(cfg.Config, cfg.RateLimiter, false); err != nil {
		return nil, err
	}
	return q, nil
}

// AddWithOpts adds each of items with the given options; see AddOpts and
// PriorityInterface.AddWithOpts. It does not block on consumers.
func (q *PriorityQueue[T]) AddWithOpts(opts AddOpts, items ...T) {
	if q.e.shut.Load() {
		return
	}
	for _, item := range items {
		d := opts.After
		if opts.RateLimited {
			if rl := q.limiter.When(item); d <= 0 || rl < d {
				d = rl
			}
		}
		if opts.RateLimited || opts.After > 0 {
			q.e.metrics.retry()
		}
		q.e.add(item, opts.Priority, d)
	}
}

// GetWithPriority is Get that also returns the priority the item was queued
// with. The caller must call Done with the item.
func (q *PriorityQueue[T]) GetWithPriority() (item T, priority int, shutdown bool) {
	return q.e.get()
}
