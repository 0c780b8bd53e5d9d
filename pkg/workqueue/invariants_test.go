package workqueue

import (
	"fmt"
	"testing"
)

// checkInvariants verifies the engine's internal bookkeeping. It takes the
// lock, so it may run concurrently with the queue's users.
func (e *engine[T]) checkInvariants() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	queued, processing := 0, 0
	for key, r := range e.items {
		if r.key != key {
			return fmt.Errorf("record for %v holds key %v", key, r.key)
		}
		f := r.flags
		switch {
		case f == 0:
			return fmt.Errorf("%v: record kept with no state", key)
		case f&flagDirty != 0 && f&flagWaiting != 0 && !e.separateDelays:
			return fmt.Errorf("%v: both dirty and waiting", key)
		case f&flagQueued != 0 && (f&flagDirty == 0 || f&flagProcessing != 0):
			return fmt.Errorf("%v: queued but flags %04b", key, f)
		case f&flagDirty != 0 && f&flagProcessing == 0 && f&flagQueued == 0:
			return fmt.Errorf("%v: dirty and idle but not queued", key)
		}
		if f&flagQueued != 0 {
			queued++
		}
		if f&flagProcessing != 0 {
			processing++
		}
		if f&flagWaiting != 0 {
			if i := int(r.heapIdx); i < 0 || i >= len(e.delayed) || e.delayed[i].r != r {
				return fmt.Errorf("%v: waiting but not at its heap index %d", key, r.heapIdx)
			}
		}
	}
	if queued != e.nready {
		return fmt.Errorf("%d items queued, nready %d", queued, e.nready)
	}
	if processing != e.nprocessing {
		return fmt.Errorf("%d items processing, nprocessing %d", processing, e.nprocessing)
	}
	for i, ent := range e.delayed {
		r := ent.r
		if r.flags&flagWaiting == 0 || e.items[r.key] != r {
			return fmt.Errorf("heap entry %d (%v) is not a waiting item", i, r.key)
		}
		if i > 0 && e.delayed.less(i, (i-1)/2) {
			return fmt.Errorf("heap order broken at %d", i)
		}
	}
	live := 0
	for i, lv := range e.levels {
		if i > 0 && e.levels[i-1].prio <= lv.prio {
			return fmt.Errorf("levels not sorted at %d", i)
		}
		for j := 0; j < lv.q.len(); j++ {
			ent := lv.q.buf[(lv.q.head+j)&(len(lv.q.buf)-1)]
			if ent.seq == ent.r.seq && ent.r.flags&flagQueued != 0 {
				live++
				if ent.r.prio != lv.prio {
					return fmt.Errorf("%v: live entry at priority %d, record says %d", ent.r.key, lv.prio, ent.r.prio)
				}
			}
		}
	}
	if live != e.nready {
		return fmt.Errorf("%d live entries, nready %d", live, e.nready)
	}
	if e.waiters.len() > 0 && e.nready > e.woken {
		return fmt.Errorf("%d waiters blocked while %d items are ready and %d waiters woken", e.waiters.len(), e.nready, e.woken)
	}
	if e.woken < 0 {
		return fmt.Errorf("woken count %d", e.woken)
	}
	return nil
}

func mustCheck[T comparable](tb testing.TB, e *engine[T]) {
	tb.Helper()
	if err := e.checkInvariants(); err != nil {
		tb.Fatalf("invariant broken: %v", err)
	}
}
