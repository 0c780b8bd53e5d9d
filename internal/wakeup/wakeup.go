// Package wakeup enqueues controller keys again after a delay measured on an
// injected clock, keeping one pending wake-up per key: the earliest.
package wakeup

import (
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// Delayer enqueues keys after a delay on an injected clock, keeping only the
// earliest pending wake-up per key. It is safe for concurrent use.
type Delayer struct {
	clock   clock.WithDelayedExecution
	enqueue func(key string)

	mu      sync.Mutex
	stopped bool               // set by Stop; After never arms a timer again
	pending map[string]*wakeup // one per key; fired ones stay until replaced or forgotten
}

// wakeup is one pending delayed enqueue.
type wakeup struct {
	timer    clock.Timer
	deadline time.Time
	fired    atomic.Bool
}

// New returns a Delayer that calls enqueue with a key once its delay has
// passed on c. enqueue may be called from the clock's own goroutine (or,
// with a fake clock, from Step) and must not block.
func New(c clock.WithDelayedExecution, enqueue func(string)) *Delayer {
	return &Delayer{clock: c, enqueue: enqueue, pending: map[string]*wakeup{}}
}

// After enqueues key once delay has passed, unless an earlier wake-up for key
// is already pending.
func (d *Delayer) After(key string, delay time.Duration) {
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

// Pending returns the time of key's wake-up when one is armed and has not
// fired yet.
func (d *Delayer) Pending(key string) (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	w, ok := d.pending[key]
	if !ok || w.fired.Load() {
		return time.Time{}, false
	}
	return w.deadline, true
}

// Forget drops the pending wake-up of key.
func (d *Delayer) Forget(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if w, ok := d.pending[key]; ok {
		w.timer.Stop()
		delete(d.pending, key)
	}
}

// Stop stops every pending wake-up; later calls of After do nothing. It is
// idempotent.
func (d *Delayer) Stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopped = true
	for key, w := range d.pending {
		w.timer.Stop()
		delete(d.pending, key)
	}
}
