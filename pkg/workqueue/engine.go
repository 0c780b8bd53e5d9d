package workqueue

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// itemFlags is the state of one item in the engine.
type itemFlags uint8

const (
	// flagDirty: the item needs a processing pass that has not started yet.
	// Never set together with flagWaiting.
	flagDirty itemFlags = 1 << iota
	// flagQueued: the item has a live entry in a ready level. Implies
	// flagDirty and not flagProcessing.
	flagQueued
	// flagProcessing: a consumer got the item and has not called Done.
	flagProcessing
	// flagWaiting: the item is in the delay heap until its ready time.
	// Set together with flagDirty only in the client-go delay mode (see
	// engine.separateDelays).
	flagWaiting
)

// rec is the engine's record of one item. A record exists exactly while its
// item is dirty, waiting or processing; it is then recycled. It is kept to
// 56 bytes for a string key (the ready time of a waiting item is in its
// heap entry): a deep queue is bound by memory traffic. Times are durations
// since the engine's epoch on its clock.
type rec[T comparable] struct {
	key T
	// seq, while queued, stamps the record's live entry in a ready level: an
	// entry whose stamp differs is stale (left behind by a priority raise)
	// and skipped.
	seq uint64
	// prio is the priority of the pending add; meaningful while dirty or
	// waiting. Re-adds only ever raise it.
	prio int
	// addedAt and startedAt feed the latency metrics; unused without them.
	addedAt   time.Duration
	startedAt time.Duration
	// heapIdx is the index of the record's delay heap entry while waiting.
	heapIdx int32
	flags   itemFlags
}

// entry is a slot in a ready level's FIFO.
type entry[T comparable] struct {
	r   *rec[T]
	seq uint64
}

// level is the FIFO of ready items of one priority.
type level[T comparable] struct {
	prio int
	q    ring[entry[T]]
}

// waiter is a blocked Get caller.
type waiter struct {
	ch chan struct{} // capacity 1: waking never blocks the waker
	// counted is set when the waiter was woken for a ready item and is
	// counted in engine.woken.
	counted bool
}

// maxIdleLevels bounds how many empty priority levels are kept for reuse.
const maxIdleLevels = 8

// recSlab is how many records are allocated at once, so that a growing
// queue allocates once per recSlab items rather than once per item.
const recSlab = 64

// engine is the single implementation behind every queue type: a
// deduplicating, priority-ordered FIFO with a processing set and a delay
// heap, all under one lock. A plain queue is the special case with a single
// priority, which is why the priority queue costs no more. All state is
// guarded by mu.
type engine[T comparable] struct {
	mu sync.Mutex

	// items holds a record for every item that is dirty, waiting or
	// processing, and for nothing else.
	items map[T]*rec[T]
	// levels holds the ready items, one FIFO per priority, sorted by
	// priority from highest to lowest. Entries may be stale (see rec.seq).
	levels []*level[T]
	// nready counts items with flagQueued: the live entries in levels.
	nready int
	// nprocessing counts items with flagProcessing.
	nprocessing int
	// waiters are the blocked Get callers, oldest first. A newly ready item
	// wakes the oldest unless enough woken waiters are already on their way
	// (woken), so whenever waiters is non-empty, nready <= woken. A woken
	// waiter competes for the lock like any Get caller: a running consumer
	// may take the item first, which spares a context switch, and the
	// waiter then waits again.
	waiters ring[*waiter]
	woken   int
	// delayed holds the items with flagWaiting, earliest ready time first.
	delayed delayHeap[T]
	// seq stamps level entries and delay heap entries; it only grows.
	seq uint64
	// free holds recycled records. Like a Go map, it keeps the memory of
	// the queue's peak size.
	free []*rec[T]

	// separateDelays is client-go's delay mode (the delaying and rate
	// limiting queues): a delayed add is kept apart from the item's ready
	// state, as client-go's waiting heap is, and adds the item again when
	// its time comes unless the item is then already dirty; an immediate
	// add leaves it waiting. Without it (the priority queue, as
	// controller-runtime's), an item has one pending add: the highest
	// priority and the earliest ready time win.
	separateDelays bool

	shuttingDown bool
	shut         atomic.Bool // mirrors shuttingDown for lock-free reads
	// drained is closed when a ShutDownWithDrain wait may end; nil when no
	// one waits.
	drained chan struct{}

	clock clock.Clock
	// epoch is the clock's time at construction; times are kept as
	// durations since it, which on a real clock are monotonic.
	epoch         time.Time
	metrics       *queueMetrics // nil without metrics
	metricsPeriod time.Duration

	// The timer goroutine starts on the first delayed add (or the first Get
	// when metrics are on) and runs until shutdown.
	loopStarted bool
	kick        chan struct{} // capacity 1: "the earliest ready time changed"
	stop        chan struct{} // closed on shutdown
	wg          sync.WaitGroup

	waiterPool sync.Pool
}

func (e *engine[T]) init(cfg Config, separateDelays bool) {
	e.separateDelays = separateDelays
	e.items = make(map[T]*rec[T])
	e.clock = cfg.Clock
	e.epoch = cfg.Clock.Now()
	e.metrics = newQueueMetrics(cfg, e.now)
	e.metricsPeriod = cfg.MetricsUpdatePeriod
	e.kick = make(chan struct{}, 1)
	e.stop = make(chan struct{})
	e.waiterPool.New = func() any { return &waiter{ch: make(chan struct{}, 1)} }
}

// now is the time on the engine's clock, as a duration since its epoch.
func (e *engine[T]) now() time.Duration { return e.clock.Since(e.epoch) }

// add adds key with priority prio after delay d (at once if d <= 0).
func (e *engine[T]) add(key T, prio int, d time.Duration) {
	var readyAt time.Duration
	if d > 0 {
		now := e.now()
		readyAt = now + min(d, math.MaxInt64-now) // saturate, never wrap
	}
	e.mu.Lock()
	if !e.shuttingDown {
		if d <= 0 {
			e.addLocked(key, prio)
		} else {
			e.addAfterLocked(key, prio, readyAt)
		}
	}
	e.mu.Unlock()
}

func (e *engine[T]) addLocked(key T, prio int) {
	r := e.items[key]
	switch {
	case r == nil:
		r = e.newRecLocked(key)
		r.prio = prio
		e.markDirtyLocked(r)
	case r.flags&flagDirty != 0:
		e.raiseLocked(r, prio)
	case r.flags&flagWaiting != 0 && e.separateDelays:
		// The delayed add stays: it adds the item again at its time.
		r.prio = prio
		e.markDirtyLocked(r)
	case r.flags&flagWaiting != 0:
		e.delayed.remove(int(r.heapIdx))
		r.flags &^= flagWaiting
		r.prio = max(r.prio, prio)
		e.markDirtyLocked(r)
	default: // processing, nothing pending
		r.prio = prio
		e.markDirtyLocked(r)
	}
}

func (e *engine[T]) addAfterLocked(key T, prio int, readyAt time.Duration) {
	r := e.items[key]
	switch {
	case r == nil:
		r = e.newRecLocked(key)
		r.prio = prio
		e.waitLocked(r, readyAt)
	case r.flags&flagWaiting != 0:
		r.prio = max(r.prio, prio)
		if ent := &e.delayed[r.heapIdx]; readyAt < ent.readyAt {
			ent.readyAt = readyAt
			e.delayed.fix(int(r.heapIdx))
			if r.heapIdx == 0 {
				e.kickLocked()
			}
		}
	case r.flags&flagDirty != 0 && e.separateDelays:
		// Queued now, and to be added again at readyAt (client-go).
		e.waitLocked(r, readyAt)
	case r.flags&flagDirty != 0:
		// Already due now, which is earlier than readyAt.
		e.raiseLocked(r, prio)
	default: // processing, nothing pending
		r.prio = prio
		e.waitLocked(r, readyAt)
	}
}

// raiseLocked raises the priority of a dirty item, moving its ready entry
// to the end of the higher level.
func (e *engine[T]) raiseLocked(r *rec[T], prio int) {
	if prio <= r.prio {
		return
	}
	r.prio = prio
	if r.flags&flagQueued != 0 {
		e.enqueueLocked(r) // the old entry goes stale
	}
}

func (e *engine[T]) waitLocked(r *rec[T], readyAt time.Duration) {
	e.seq++
	r.flags |= flagWaiting
	e.delayed.push(delayEntry[T]{r: r, readyAt: readyAt, seq: e.seq})
	if r.heapIdx == 0 {
		e.kickLocked()
	}
}

// kickLocked tells the timer goroutine the earliest ready time changed,
// starting it if needed.
func (e *engine[T]) kickLocked() {
	e.ensureLoopLocked()
	select {
	case e.kick <- struct{}{}:
	default: // a kick is already pending
	}
}

func (e *engine[T]) ensureLoopLocked() {
	if e.loopStarted || e.shuttingDown {
		return
	}
	e.loopStarted = true
	e.wg.Go(e.loop)
}

// markDirtyLocked records that r needs processing and, unless it is being
// processed, makes it ready.
func (e *engine[T]) markDirtyLocked(r *rec[T]) {
	r.flags |= flagDirty
	if e.metrics != nil {
		added(e.metrics, r)
	}
	if r.flags&flagProcessing == 0 {
		e.readyLocked(r)
	}
}

// readyLocked queues a dirty, idle item at the end of its priority level
// and wakes a blocked Get if it needs one.
func (e *engine[T]) readyLocked(r *rec[T]) {
	e.enqueueLocked(r)
	if e.waiters.len() > 0 && e.nready > e.woken {
		w := e.waiters.pop()
		w.counted = true
		e.woken++
		w.ch <- struct{}{}
	}
}

func (e *engine[T]) enqueueLocked(r *rec[T]) {
	e.seq++
	r.seq = e.seq
	e.levelLocked(r.prio).q.push(entry[T]{r: r, seq: e.seq})
	if r.flags&flagQueued == 0 {
		r.flags |= flagQueued
		e.nready++
	}
}

// levelLocked returns the level of priority p, creating it if needed. Few
// distinct priorities are expected, so a linear scan beats a search.
func (e *engine[T]) levelLocked(p int) *level[T] {
	for i, lv := range e.levels {
		if lv.prio == p {
			return lv
		}
		if lv.prio < p {
			lv := &level[T]{prio: p}
			e.levels = append(e.levels, nil)
			copy(e.levels[i+1:], e.levels[i:])
			e.levels[i] = lv
			return lv
		}
	}
	lv := &level[T]{prio: p}
	e.levels = append(e.levels, lv)
	return lv
}

// popReadyLocked takes the oldest item of the highest priority out of the
// ready levels, or returns nil if none is ready.
func (e *engine[T]) popReadyLocked() (*rec[T], int) {
	for i, lv := range e.levels {
		for lv.q.len() > 0 {
			ent := lv.q.pop()
			r := ent.r
			if ent.seq != r.seq || r.flags&flagQueued == 0 {
				continue // stale
			}
			r.flags &^= flagQueued
			e.nready--
			if lv.q.len() == 0 && len(e.levels) > maxIdleLevels {
				e.levels = append(e.levels[:i], e.levels[i+1:]...)
			}
			return r, lv.prio
		}
	}
	return nil, 0
}

// startLocked moves r into the processing set.
func (e *engine[T]) startLocked(r *rec[T]) {
	r.flags = r.flags&^(flagDirty|flagQueued) | flagProcessing
	e.nprocessing++
	if e.metrics != nil {
		started(e.metrics, r)
		e.ensureLoopLocked()
	}
}

func (e *engine[T]) get() (item T, prio int, shutdown bool) {
	var w *waiter
	e.mu.Lock()
	for {
		if e.nready > 0 {
			if r, p := e.popReadyLocked(); r != nil {
				e.startLocked(r)
				item, prio = r.key, p
				break
			}
		}
		if e.shuttingDown {
			shutdown = true
			break
		}
		if w == nil {
			w = e.waiterPool.Get().(*waiter)
		}
		e.waiters.push(w)
		e.mu.Unlock()
		<-w.ch
		e.mu.Lock()
		if w.counted {
			w.counted = false
			e.woken--
		}
	}
	e.mu.Unlock()
	if w != nil {
		e.waiterPool.Put(w)
	}
	return item, prio, shutdown
}

func (e *engine[T]) done(key T) {
	e.mu.Lock()
	r := e.items[key]
	if r == nil || r.flags&flagProcessing == 0 {
		e.mu.Unlock()
		return
	}
	r.flags &^= flagProcessing
	e.nprocessing--
	if e.metrics != nil {
		finished(e.metrics, r)
	}
	switch {
	case r.flags&flagDirty != 0:
		e.readyLocked(r)
	case r.flags&flagWaiting == 0:
		e.freeLocked(r)
	}
	if e.drained != nil && e.nprocessing == 0 {
		close(e.drained)
		e.drained = nil
	}
	e.mu.Unlock()
}

func (e *engine[T]) len() int {
	e.mu.Lock()
	n := e.nready
	e.mu.Unlock()
	return n
}

func (e *engine[T]) shutDown(drain bool) {
	e.mu.Lock()
	e.shutDownLocked()
	var wait chan struct{}
	switch {
	case drain && e.nprocessing > 0:
		if e.drained == nil {
			e.drained = make(chan struct{})
		}
		wait = e.drained
	case !drain && e.drained != nil:
		close(e.drained) // a plain ShutDown ends any drain wait
		e.drained = nil
	}
	e.mu.Unlock()
	if wait != nil {
		<-wait
	}
	e.wg.Wait()
}

func (e *engine[T]) shutDownLocked() {
	if e.shuttingDown {
		return
	}
	e.shuttingDown = true
	e.shut.Store(true)
	for e.waiters.len() > 0 { // they will find nothing ready, or shutdown
		e.waiters.pop().ch <- struct{}{}
	}
	for _, ent := range e.delayed {
		r := ent.r
		r.flags &^= flagWaiting
		r.heapIdx = -1
		if r.flags == 0 {
			e.freeLocked(r)
		}
	}
	clear(e.delayed)
	e.delayed = e.delayed[:0]
	close(e.stop)
}

func (e *engine[T]) newRecLocked(key T) *rec[T] {
	if len(e.free) == 0 {
		slab := make([]rec[T], recSlab)
		for i := range slab {
			e.free = append(e.free, &slab[i])
		}
	}
	n := len(e.free)
	r := e.free[n-1]
	e.free[n-1] = nil
	e.free = e.free[:n-1]
	r.key = key
	r.heapIdx = -1
	e.items[key] = r
	return r
}

// freeLocked forgets an item that is neither dirty, waiting nor processing.
func (e *engine[T]) freeLocked(r *rec[T]) {
	delete(e.items, r.key)
	*r = rec[T]{}
	e.free = append(e.free, r)
}

// loop is the timer goroutine: it makes delayed items ready when their time
// comes and refreshes the unfinished-work metrics. It runs until shutdown.
func (e *engine[T]) loop() {
	var (
		timer   clock.Timer // fires at armedAt, the earliest ready time
		timerC  <-chan time.Time
		armedAt time.Duration
		mTimer  clock.Timer
		mC      <-chan time.Time
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
		if mTimer != nil {
			mTimer.Stop()
		}
	}()
	if e.metrics != nil {
		mTimer = e.clock.NewTimer(e.untilMetricsTick())
		mC = mTimer.C()
	}
	for {
		select {
		case <-e.stop:
			return
		case <-mC:
			e.updateUnfinishedWork()
			// A fresh timer each time: fake clocks do not drain fired
			// timers, so Reset could block them.
			mTimer = e.clock.NewTimer(e.untilMetricsTick())
			mC = mTimer.C()
			continue
		case <-e.kick:
		case <-timerC:
			timer, timerC, armedAt = nil, nil, 0
		}
		// Promote what is due and arm the timer for the next ready time.
		for tries := 0; ; tries++ {
			next, ok := e.promoteDue()
			if !ok {
				if timer != nil {
					timer.Stop()
					timer, timerC, armedAt = nil, nil, 0
				}
				break
			}
			if timer != nil && next == armedAt {
				break
			}
			if timer != nil {
				timer.Stop()
				timer, timerC, armedAt = nil, nil, 0
			}
			now := e.now()
			if next <= now {
				continue // came due meanwhile
			}
			t := e.clock.NewTimer(next - now)
			// Timers take a duration, not a deadline: if the clock moved
			// while the timer was made (a test stepping a fake clock),
			// it may fire late, so make it again.
			if e.now()-now > armSlack && tries < maxArmTries {
				t.Stop()
				continue
			}
			timer, timerC, armedAt = t, t.C(), next
			break
		}
	}
}

// untilMetricsTick returns how long until the next refresh of the
// unfinished-work gauges. Refreshes fall on the queue's epoch plus whole
// periods, as client-go's ticker started in its constructor does, although
// the timer goroutine starts only on first use; they do not drift with the
// time each refresh takes.
func (e *engine[T]) untilMetricsTick() time.Duration {
	return e.metricsPeriod - e.now()%e.metricsPeriod
}

// A timer whose making took longer than armSlack on the queue's clock is
// made again, at most maxArmTries times.
const (
	armSlack    = time.Microsecond
	maxArmTries = 3
)

// promoteDue makes every delayed item whose time has come ready and returns
// the next ready time, if any item still waits.
func (e *engine[T]) promoteDue() (next time.Duration, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.shuttingDown {
		return next, false
	}
	now := e.now()
	for len(e.delayed) > 0 && e.delayed[0].readyAt <= now {
		r := e.delayed.popMin().r
		r.flags &^= flagWaiting
		if r.flags&flagDirty == 0 {
			e.markDirtyLocked(r)
		}
	}
	if len(e.delayed) == 0 {
		return next, false
	}
	return e.delayed[0].readyAt, true
}

func (e *engine[T]) updateUnfinishedWork() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.shuttingDown {
		return
	}
	var total, longest float64
	if e.nprocessing > 0 {
		now := e.now()
		for _, r := range e.items {
			if r.flags&flagProcessing == 0 {
				continue
			}
			age := (now - r.startedAt).Seconds()
			total += age
			longest = max(longest, age)
		}
	}
	e.metrics.unfinished.Set(total)
	e.metrics.longest.Set(longest)
}
