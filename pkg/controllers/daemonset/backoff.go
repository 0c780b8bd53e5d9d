package daemonset

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Bounds of the back-off between replacements of a failed daemon pod on
// one node, as Kubernetes uses.
const (
	failedPodBackoffInitial = time.Second
	failedPodBackoffMax     = 15 * time.Minute
)

// backoff spaces out the replacements of failed daemon pods per
// DaemonSet and node: each replacement doubles the wait before the next,
// from failedPodBackoffInitial up to failedPodBackoffMax; an entry idle
// for twice the maximum starts over. Safe for concurrent use.
type backoff struct {
	clock clock.PassiveClock

	mu sync.Mutex
	// entries holds the current wait and the time of the last replacement
	// per key. Guarded by mu.
	entries map[string]*backoffEntry
}

type backoffEntry struct {
	wait time.Duration
	last time.Time
}

func newBackoff(c clock.PassiveClock) *backoff {
	return &backoff{clock: c, entries: map[string]*backoffEntry{}}
}

// inBackoff reports whether key's last replacement is more recent than
// its wait, and how long is left.
func (b *backoff) inBackoff(key string) (time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.entries[key]
	if e == nil {
		return 0, false
	}
	left := e.wait - b.clock.Since(e.last)
	return left, left > 0
}

// next records a replacement for key now and lengthens its wait.
func (b *backoff) next(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	e := b.entries[key]
	switch {
	case e == nil || now.Sub(e.last) > 2*failedPodBackoffMax:
		b.entries[key] = &backoffEntry{wait: failedPodBackoffInitial, last: now}
	default:
		e.wait = min(2*e.wait, failedPodBackoffMax)
		e.last = now
	}
}

// gc forgets the entries idle for longer than twice the maximum.
func (b *backoff) gc() {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	for k, e := range b.entries {
		if now.Sub(e.last) > 2*failedPodBackoffMax {
			delete(b.entries, k)
		}
	}
}
