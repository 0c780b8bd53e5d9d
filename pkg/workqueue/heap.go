package workqueue

import "time"

// delayEntry is an item waiting in the delay heap: its ready time and the
// order it started waiting in (ties are first come, first served).
type delayEntry[T comparable] struct {
	r       *rec[T]
	readyAt time.Duration
	seq     uint64
}

// delayHeap is a binary min-heap of the items waiting for their ready time,
// ordered by ready time and then by the order they started waiting. Each
// record keeps its entry's index so it can be moved when its ready time
// improves. Not safe for concurrent use; the engine's lock guards it.
type delayHeap[T comparable] []delayEntry[T]

func (h delayHeap[T]) less(i, j int) bool {
	a, b := &h[i], &h[j]
	if a.readyAt == b.readyAt {
		return a.seq < b.seq
	}
	return a.readyAt < b.readyAt
}

func (h delayHeap[T]) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].r.heapIdx = int32(i)
	h[j].r.heapIdx = int32(j)
}

func (h *delayHeap[T]) push(e delayEntry[T]) {
	e.r.heapIdx = int32(len(*h))
	*h = append(*h, e)
	h.up(len(*h) - 1)
}

// popMin removes and returns the earliest entry. The heap must not be empty.
func (h *delayHeap[T]) popMin() delayEntry[T] {
	return h.remove(0)
}

// remove takes the entry at index i out of the heap.
func (h *delayHeap[T]) remove(i int) delayEntry[T] {
	old := *h
	n := len(old) - 1
	e := old[i]
	if i != n {
		old.swap(i, n)
	}
	old[n] = delayEntry[T]{}
	*h = old[:n]
	if i != n {
		if !h.down(i) {
			h.up(i)
		}
	}
	e.r.heapIdx = -1
	return e
}

// fix restores the order after the entry at index i got an earlier time.
func (h delayHeap[T]) fix(i int) { h.up(i) }

func (h delayHeap[T]) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

// down sifts the entry at i towards the leaves and reports whether it moved.
func (h delayHeap[T]) down(i int) bool {
	start := i
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			break
		}
		h.swap(i, m)
		i = m
	}
	return i > start
}
