package workqueue

// Queue is a deduplicating FIFO work queue; see the package documentation
// for its guarantees. It is safe for concurrent use. Create it with New; the
// zero Queue is not usable. Call ShutDown (or ShutDownWithDrain) when done
// with it.
type Queue[T comparable] struct {
	e engine[T]
}

var _ Interface[string] = (*Queue[string])(nil)

// New returns an empty Queue configured by cfg. It starts no goroutine.
func New[T comparable](cfg Config) (*Queue[T], error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	q := &Queue[T]{}
	q.e.init(cfg, false)
	return q, nil
}

// Add marks item as needing processing; see Interface.Add. It does not block.
func (q *Queue[T]) Add(item T) { q.e.add(item, 0, 0) }

// Get blocks until an item is ready and returns it; see Interface.Get. The
// caller must call Done with the item.
func (q *Queue[T]) Get() (item T, shutdown bool) {
	item, _, shutdown = q.e.get()
	return item, shutdown
}

// Done marks item as processed; see Interface.Done.
func (q *Queue[T]) Done(item T) { q.e.done(item) }

// Len reports the number of ready items; see Interface.Len.
func (q *Queue[T]) Len() int { return q.e.len() }

// ShutDown stops the queue; see Interface.ShutDown.
func (q *Queue[T]) ShutDown() { q.e.shutDown(false) }

// ShutDownWithDrain stops the queue and waits for the work in it to be
// done; see Interface.ShutDownWithDrain.
func (q *Queue[T]) ShutDownWithDrain() { q.e.shutDown(true) }

// ShuttingDown reports whether the queue was shut down. It does not block.
func (q *Queue[T]) ShuttingDown() bool { return q.e.shut.Load() }
