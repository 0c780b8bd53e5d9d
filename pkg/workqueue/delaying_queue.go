package workqueue

import "time"

// DelayingQueue is a Queue that can also add items after a delay, measured
// on the Config's clock. It is safe for concurrent use. Create it with
// NewDelaying and shut it down when done: the first delayed add starts a
// timer goroutine that ShutDown stops and waits for.
type DelayingQueue[T comparable] struct {
	Queue[T]
}

var _ DelayingInterface[string] = (*DelayingQueue[string])(nil)

// NewDelaying returns an empty DelayingQueue configured by cfg. It starts no
// goroutine.
func NewDelaying[T comparable](cfg Config) (*DelayingQueue[T], error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	q := &DelayingQueue[T]{}
	q.e.init(cfg, true)
	return q, nil
}

// AddAfter adds item once d has passed; see DelayingInterface.AddAfter. It
// counts as a retry in the metrics. It does not block.
func (q *DelayingQueue[T]) AddAfter(item T, d time.Duration) {
	if q.e.shut.Load() {
		return
	}
	q.e.metrics.retry()
	q.e.add(item, 0, d)
}
