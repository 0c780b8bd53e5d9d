package cache

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

type notificationKind uint8

const (
	addNotification notificationKind = iota
	updateNotification
	deleteNotification
)

// notification is one call to make on a Handler.
type notification[T Object] struct {
	kind    notificationKind
	initial bool // an add that belongs to the handler's initial content
	oldObj  T
	newObj  T
	deleted any // T or DeletedFinalStateUnknown[T]
}

// backlogWarning is the first backlog size at which a listener logs that its
// handler is falling behind; it doubles after every warning.
const backlogWarning = 1024

// listener delivers notifications to one Handler from its own goroutine.
//
// Slow handler policy: each listener has its own unbounded FIFO (a ring
// buffer that grows by doubling), so the informer hands a notification over
// in O(1) without ever waiting, and a slow handler delays only itself. No
// notification is ever dropped or coalesced, because handlers rely on
// seeing every change of a key in order. The cost of a handler that stays
// slower than the event rate is memory: its backlog is reported by
// Registration.Pending and logged at 1024, 2048, 4096... pending
// notifications, so the problem is visible rather than hidden.
type listener[T Object] struct {
	handler Handler[T]
	logger  *slog.Logger

	mu   sync.Mutex
	cond sync.Cond // signalled on add and stop; uses mu
	// ring holds the pending notifications: n of them from head, wrapping.
	ring []notification[T]
	head int
	n    int
	// initialPending counts initial adds queued or being handled.
	initialPending int
	stopped        bool
	warnAt         int
	// undelivered counts notifications queued or taken but not yet handled.
	undelivered atomic.Int64
	// halted mirrors stopped for the run loop, which checks it before each
	// call without taking mu.
	halted atomic.Bool

	// resyncPeriod and nextResync are guarded by the informer's mu.
	resyncPeriod time.Duration
	nextResync   time.Time
}

func newListener[T Object](h Handler[T], resync time.Duration, logger *slog.Logger) *listener[T] {
	l := &listener[T]{handler: h, logger: logger, resyncPeriod: resync, warnAt: backlogWarning,
		ring: make([]notification[T], 16)}
	l.cond.L = &l.mu
	return l
}

// add queues n; it never blocks beyond the listener's own short lock.
func (l *listener[T]) add(ctx context.Context, n notification[T]) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.addLocked(ctx, n)
}

// addBatch queues the notifications of a batch, skipping resync-only ones
// unless syncing, under one lock and with at most one wake-up.
func (l *listener[T]) addBatch(ctx context.Context, batch []pendingNotification[T], syncing bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range batch {
		if p.sync && !syncing {
			continue
		}
		l.addLocked(ctx, p.n)
	}
}

func (l *listener[T]) addLocked(ctx context.Context, n notification[T]) {
	if l.stopped {
		return
	}
	if l.n == len(l.ring) {
		grown := make([]notification[T], 2*len(l.ring))
		k := copy(grown, l.ring[l.head:])
		copy(grown[k:], l.ring[:l.head])
		l.ring, l.head = grown, 0
	}
	l.ring[(l.head+l.n)%len(l.ring)] = n
	l.n++
	l.undelivered.Add(1)
	if n.initial {
		l.initialPending++
	}
	if l.n >= l.warnAt {
		l.logger.WarnContext(ctx, "event handler is falling behind", "pending", l.n)
		l.warnAt *= 2
	}
	if l.n == 1 {
		l.cond.Signal()
	}
}

// stop drops pending notifications and makes run return after the call in
// progress, if any.
func (l *listener[T]) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopped = true
	l.halted.Store(true)
	l.undelivered.Store(0)
	clear(l.ring)
	l.n, l.initialPending = 0, 0
	l.cond.Broadcast()
}

func (l *listener[T]) pending() int { return int(l.undelivered.Load()) }

func (l *listener[T]) initialDone() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.initialPending == 0 && !l.stopped
}

// runBatch is how many notifications run takes from the ring per lock.
const runBatch = 64

// run delivers notifications until stop.
func (l *listener[T]) run() {
	batch := make([]notification[T], 0, runBatch)
	for {
		l.mu.Lock()
		for l.n == 0 && !l.stopped {
			l.cond.Wait()
		}
		if l.stopped {
			l.mu.Unlock()
			return
		}
		for l.n > 0 && len(batch) < runBatch {
			batch = append(batch, l.ring[l.head])
			l.ring[l.head] = notification[T]{}
			l.head = (l.head + 1) % len(l.ring)
			l.n--
		}
		if l.n == 0 && len(l.ring) > 1024 {
			l.ring, l.head = make([]notification[T], 16), 0
			l.warnAt = backlogWarning
		}
		l.mu.Unlock()

		for i, n := range batch {
			if l.halted.Load() {
				clear(batch)
				return
			}
			switch n.kind {
			case addNotification:
				l.handler.OnAdd(n.newObj, n.initial)
			case updateNotification:
				l.handler.OnUpdate(n.oldObj, n.newObj)
			case deleteNotification:
				l.handler.OnDelete(n.deleted)
			}
			if n.initial {
				l.mu.Lock()
				if l.initialPending > 0 {
					l.initialPending--
				}
				l.mu.Unlock()
			}
			batch[i] = notification[T]{}
			if !l.halted.Load() {
				l.undelivered.Add(-1)
			}
		}
		batch = batch[:0]
	}
}
