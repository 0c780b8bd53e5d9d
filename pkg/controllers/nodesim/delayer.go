package nodesim

import (
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// delayer enqueues keys after a delay on an injected clock, keeping only the
// earliest pending wake-up per key. It is safe for concurrent use.
type delayer struct {
	clock   clock.WithDelayedExecution
	enqueue func(key string)

	mu      sync.Mutex
	stopped bool               // set by stop; after never arms a timer again
	pending map[string]*wakeup // one per key; fired ones stay until replaced or forgotten
}

// wakeup is one pending delayed enqueue.
type wakeup struct {
	timer    clock.Timer
	deadline time.Time
	fired    atomic.Bool
}

func newDelayer(c clock.WithDelayedExecution, enqueue func(string)) *delayer {
	return &delayer{clock: c, enqueue: enqueue, pending: map[string]*wakeup{}}
}

// after enqueues key once d has passed, unless an earlier wake-up for key
// is already pending.
func (d *delayer) after(key string, delay time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return
	}
	deadline := d.clock.Now().Add(delay)
	if w, ok := d.pending[key]; ok && !w.fired.Load() {
		if !w.deadline.After(deadline) {
			return
		}
		w.timer.Stop()
	}
	w := &wakeup{deadline: deadline}
	// The callback may run under the clock's own lock (a fake clock calls it
	// from Step), so it touches only the atomic and the queue, never d.mu.
	w.timer = d.clock.AfterFunc(delay, func() {
		w.fired.Store(true)
		d.enqueue(key)
	})
	d.pending[key] = w
}

// armed reports whether a wake-up for key is pending and has not fired.
func (d *delayer) armed(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	w, ok := d.pending[key]
	return ok && !w.fired.Load()
}

// forget drops the pending wake-up of key.
func (d *delayer) forget(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if w, ok := d.pending[key]; ok {
		w.timer.Stop()
		delete(d.pending, key)
	}
}

// stop stops every pending wake-up; later calls of after do nothing.
func (d *delayer) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopped = true
	for key, w := range d.pending {
		w.timer.Stop()
		delete(d.pending, key)
	}
}
