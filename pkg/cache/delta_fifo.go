package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// DeltaType is the kind of a change.
type DeltaType string

// The kinds of change a DeltaFIFO records.
const (
	Added   DeltaType = "Added"
	Updated DeltaType = "Updated"
	Deleted DeltaType = "Deleted"
	// Replaced is an object present in a relist (Replace).
	Replaced DeltaType = "Replaced"
	// Sync is a periodic resync of an object already known.
	Sync DeltaType = "Sync"
)

// Delta is one change of one object.
type Delta[T Object] struct {
	Type DeltaType
	// Object is the object after the change; for Deleted, its last state.
	Object T
	// Tombstone is set on a Deleted delta that a Replace produced for an
	// object missing from the new list: the deletion was not observed, and
	// Object is only the last known state. It is then what delete handlers
	// receive.
	Tombstone *DeletedFinalStateUnknown[T]
}

// Deltas is the list of changes of one key, oldest first.
type Deltas[T Object] []Delta[T]

// Oldest returns the oldest delta, or false when there is none.
func (d Deltas[T]) Oldest() (Delta[T], bool) {
	if len(d) == 0 {
		return Delta[T]{}, false
	}
	return d[0], true
}

// Newest returns the most recent delta, or false when there is none.
func (d Deltas[T]) Newest() (Delta[T], bool) {
	if len(d) == 0 {
		return Delta[T]{}, false
	}
	return d[len(d)-1], true
}

// KeyLister is what a DeltaFIFO knows of the objects already processed:
// the informer's Indexer.
type KeyLister[T Object] interface {
	ListKeys() []string
	GetByKey(key string) (T, bool)
}

// ErrRequeue, wrapped in the error a PopProcessFunc returns, asks Pop to put
// the deltas back in the queue.
var ErrRequeue = errors.New("requeue")

// PopProcessFunc processes all the deltas of one key. isInInitialList tells
// whether they belong to the first Replace, before HasSynced turned true.
type PopProcessFunc[T Object] func(deltas Deltas[T], isInInitialList bool) error

// DeltaFIFOConfig configures a DeltaFIFO.
type DeltaFIFOConfig[T Object] struct {
	// KnownObjects lists the objects already processed; Replace turns the
	// known objects missing from a new list into tombstones and Resync
	// replays them. Nil means none are known.
	KnownObjects KeyLister[T]
	// Transform, if set, is applied to every object entering the queue
	// (Add, Update, Delete, Replace) before it is stored anywhere; it may
	// return a modified copy, such as one without managedFields.
	Transform func(T) (T, error)
}

// DeltaFIFO is a queue of keys, each with the list of its pending changes.
// A key is queued at most once however many changes it accumulates; Pop
// hands all of a key's changes to one call. It is safe for concurrent use:
// producers call Add, Update, Delete, Replace and Resync, one consumer calls
// Pop or PopBatch.
type DeltaFIFO[T Object] struct {
	// processMu is held while popped deltas are processed, and by Replace
	// and Resync, which compare the queue with the processed objects and so
	// must not run while a batch is between the two. Add, Update and Delete
	// do not take it: producers keep queueing while a batch is processed.
	// Lock order: processMu, then mu.
	processMu sync.Mutex
	mu        sync.Mutex
	cond      sync.Cond // signalled when queue grows or the FIFO closes; uses mu
	// items holds the pending deltas of each queued key; a key is in items
	// iff it is in queue, and its deltas are never empty.
	items map[string]Deltas[T]
	// queue is the keys in FIFO order, each at most once.
	queue []string
	// head is the index in queue of the next key to pop.
	head int
	// populated is set by the first Add, Update, Delete or Replace.
	populated bool
	// initialPopulationCount is the number of keys of the first Replace
	// not yet popped.
	initialPopulationCount int
	closed                 bool
	// inFlight holds the keys of the batch being processed: neither queued
	// nor yet known, but a Delete of them must not be dropped.
	inFlight map[string]struct{}
	// backlog is whether queue is non-empty, readable without mu.
	backlog atomic.Bool

	known     KeyLister[T]
	transform func(T) (T, error)
}

// NewDeltaFIFO returns an empty DeltaFIFO.
func NewDeltaFIFO[T Object](cfg DeltaFIFOConfig[T]) (*DeltaFIFO[T], error) {
	f := &DeltaFIFO[T]{
		items:     map[string]Deltas[T]{},
		known:     cfg.KnownObjects,
		transform: cfg.Transform,
	}
	f.cond.L = &f.mu
	return f, nil
}

// Close wakes Pop and makes it return ErrFIFOClosed once the queue is empty.
// It does not stop producers: changes still queue after Close, and Pop
// hands them out. It is idempotent.
func (f *DeltaFIFO[T]) Close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.cond.Broadcast()
}

// IsClosed reports whether Close was called.
func (f *DeltaFIFO[T]) IsClosed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

// errNoDeltas is KeyOf's error for an empty Deltas.
var errNoDeltas = errors.New("zero-length deltas have no key")

// KeyOf returns the key the FIFO files obj under. obj may be a T, the
// Deltas of a key (whose newest delta names it), or a tombstone, a
// DeletedFinalStateUnknown[T] value or pointer, whose Key is returned as it
// is. It is safe for concurrent use and does not block.
func (f *DeltaFIFO[T]) KeyOf(obj any) (string, error) {
	if d, ok := obj.(Deltas[T]); ok {
		newest, ok := d.Newest()
		if !ok {
			return "", errNoDeltas
		}
		if newest.Tombstone != nil {
			return newest.Tombstone.Key, nil
		}
		obj = newest.Object
	}
	switch o := obj.(type) {
	case DeletedFinalStateUnknown[T]:
		return o.Key, nil
	case *DeletedFinalStateUnknown[T]:
		if o == nil {
			return "", errors.New("nil tombstone")
		}
		return o.Key, nil
	case T:
		if isNil(o) {
			return "", errors.New("nil object")
		}
		return ObjectKey(o)
	}
	var zero T
	return "", fmt.Errorf("unexpected object of type %T, want %T, its deltas or a tombstone of it", obj, zero)
}

// ErrFIFOClosed is returned by Pop after Close.
var ErrFIFOClosed = errors.New("delta fifo closed")

// HasSynced reports whether the first Replace (or any first change) has
// been fully popped and processed.
func (f *DeltaFIFO[T]) HasSynced() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hasSyncedLocked()
}

func (f *DeltaFIFO[T]) hasSyncedLocked() bool {
	return f.populated && f.initialPopulationCount == 0
}

// hasBacklog reports, without locking, whether keys are queued.
func (f *DeltaFIFO[T]) hasBacklog() bool { return f.backlog.Load() }

// Len returns the number of queued keys.
func (f *DeltaFIFO[T]) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.queue) - f.head
}

// Add records that obj was added.
func (f *DeltaFIFO[T]) Add(obj T) error { return f.change(Added, obj) }

// Update records that obj was updated.
func (f *DeltaFIFO[T]) Update(obj T) error { return f.change(Updated, obj) }

// Delete records that obj was deleted. A delete of an object neither known
// nor queued is dropped, without reaching the Transform: there is nothing to
// tell anyone (a relist may have reported the deletion already).
func (f *DeltaFIFO[T]) Delete(obj T) error {
	if isNil(obj) {
		return errors.New("nil object")
	}
	key, err := ObjectKey(obj)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.populated = true
	drop := !f.existsLocked(key)
	f.mu.Unlock()
	if drop {
		return nil
	}
	return f.change(Deleted, obj)
}

func (f *DeltaFIFO[T]) change(t DeltaType, obj T) error {
	if isNil(obj) {
		return errors.New("nil object")
	}
	obj, err := f.applyTransform(obj)
	if err != nil {
		return err
	}
	key, err := ObjectKey(obj)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.populated = true
	// Checked again: the key may have been popped while transforming.
	if t == Deleted && !f.existsLocked(key) {
		return nil
	}
	f.queueLocked(key, Delta[T]{Type: t, Object: obj})
	return nil
}

// existsLocked reports whether key is queued, being processed or known: a
// delete of it has someone to tell.
func (f *DeltaFIFO[T]) existsLocked(key string) bool {
	if _, queued := f.items[key]; queued {
		return true
	}
	if _, inFlight := f.inFlight[key]; inFlight {
		return true
	}
	return f.knownLocked(key)
}

func (f *DeltaFIFO[T]) applyTransform(obj T) (T, error) {
	if f.transform == nil {
		return obj, nil
	}
	out, err := f.transform(obj)
	if err != nil {
		return out, fmt.Errorf("transform: %w", err)
	}
	if isNil(out) {
		return out, errors.New("transform returned nil")
	}
	return out, nil
}

func (f *DeltaFIFO[T]) knownLocked(key string) bool {
	if f.known == nil {
		return false
	}
	_, ok := f.known.GetByKey(key)
	return ok
}

// queueLocked appends d to key's deltas, queueing the key if needed.
func (f *DeltaFIFO[T]) queueLocked(key string, d Delta[T]) {
	old, queued := f.items[key]
	deltas := append(old, d)
	deltas = dedupDeltas(deltas)
	f.items[key] = deltas
	if !queued {
		f.queue = append(f.queue, key)
		f.backlog.Store(true)
		f.cond.Signal()
	}
}

// dedupDeltas collapses two consecutive deletes into one as client-go
// does: the older is kept, unless it is a tombstone, which the newer (an
// observed delete, or a tombstone too) replaces.
func dedupDeltas[T Object](deltas Deltas[T]) Deltas[T] {
	n := len(deltas)
	if n < 2 {
		return deltas
	}
	older, newer := deltas[n-2], deltas[n-1]
	if older.Type != Deleted || newer.Type != Deleted {
		return deltas
	}
	keep := older
	if older.Tombstone != nil {
		keep = newer
	}
	deltas[n-2] = keep
	deltas[n-1] = Delta[T]{}
	return deltas[:n-1]
}

// Replace records a relist: every object of list gets a Replaced delta, and
// every object known (or queued) but missing from list gets a Deleted delta
// whose Tombstone carries its last known state. The first Replace defines
// the initial population that HasSynced waits for.
func (f *DeltaFIFO[T]) Replace(list []T) error {
	type item struct {
		key string
		obj T
	}
	items := make([]item, 0, len(list))
	for _, obj := range list {
		if isNil(obj) {
			return fmt.Errorf("nil object in list")
		}
		obj, err := f.applyTransform(obj)
		if err != nil {
			return err
		}
		key, err := ObjectKey(obj)
		if err != nil {
			return err
		}
		items = append(items, item{key, obj})
	}
	f.processMu.Lock()
	defer f.processMu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	present := make(map[string]struct{}, len(items))
	for _, it := range items {
		present[it.key] = struct{}{}
		f.queueLocked(it.key, Delta[T]{Type: Replaced, Object: it.obj})
	}
	tombstone := func(key string, last T) {
		f.queueLocked(key, Delta[T]{Type: Deleted, Object: last,
			Tombstone: &DeletedFinalStateUnknown[T]{Key: key, Obj: last}})
	}
	// Queued keys missing from the list: their newest queued state is the
	// last known one (skip those whose newest delta already deletes them).
	for key, deltas := range f.items {
		if _, ok := present[key]; ok {
			continue
		}
		if f.knownLocked(key) {
			continue // handled below with the processed state
		}
		newest, _ := deltas.Newest()
		if newest.Type == Deleted {
			continue
		}
		tombstone(key, newest.Object)
	}
	if f.known != nil {
		for _, key := range f.known.ListKeys() {
			if _, ok := present[key]; ok {
				continue
			}
			last, ok := f.known.GetByKey(key)
			if !ok {
				continue
			}
			if deltas, queued := f.items[key]; queued {
				if newest, _ := deltas.Newest(); newest.Type == Deleted {
					continue // already on its way out
				}
				newest, _ := deltas.Newest()
				last = newest.Object
			}
			tombstone(key, last)
		}
	}
	if !f.populated {
		f.populated = true
		f.initialPopulationCount = len(f.queue) - f.head
	}
	return nil
}

// Resync queues a Sync delta for every known object whose key is not
// already queued.
func (f *DeltaFIFO[T]) Resync() error {
	f.processMu.Lock()
	defer f.processMu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.known == nil {
		return nil
	}
	for _, key := range f.known.ListKeys() {
		if _, queued := f.items[key]; queued {
			continue
		}
		obj, ok := f.known.GetByKey(key)
		if !ok {
			continue
		}
		f.queueLocked(key, Delta[T]{Type: Sync, Object: obj})
	}
	return nil
}

// Pop blocks until a key is queued, then calls process with all its
// deltas. Producers may keep adding while process runs, but Replace and
// Resync wait for it, and a key being processed is not handed out again
// until process returns (process must not call back into the FIFO). If
// process returns an error wrapping ErrRequeue, the deltas go back to the
// end of the queue (unless the key was queued again meanwhile) and the
// error is returned. Pop returns ctx.Err() when ctx ends and ErrFIFOClosed
// when the FIFO is closed and empty.
func (f *DeltaFIFO[T]) Pop(ctx context.Context, process PopProcessFunc[T]) error {
	var popped Popped[T]
	err := f.PopBatch(ctx, 1, func(batch []Popped[T]) error {
		popped = batch[0]
		return process(popped.Deltas, popped.IsInInitialList)
	})
	if err != nil && errors.Is(err, ErrRequeue) {
		f.mu.Lock()
		if _, queued := f.items[popped.Key]; !queued {
			f.items[popped.Key] = popped.Deltas
			f.queue = append(f.queue, popped.Key)
			f.backlog.Store(true)
			f.cond.Signal()
		}
		f.mu.Unlock()
	}
	return err
}

// Popped is one key's deltas as handed out by PopBatch.
type Popped[T Object] struct {
	Key    string
	Deltas Deltas[T]
	// IsInInitialList tells whether the deltas belong to the first Replace.
	IsInInitialList bool
}

// PopBatch is Pop for up to max keys at once (max < 1 means all queued):
// it blocks until at least one key is queued, then calls process once with
// the keys in queue order. It does not requeue; process's error is returned
// as is. HasSynced turns true only once the batch holding the last key of
// the first Replace has been processed.
func (f *DeltaFIFO[T]) PopBatch(ctx context.Context, max int, process func(batch []Popped[T]) error) error {
	stop := context.AfterFunc(ctx, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.cond.Broadcast()
	})
	defer stop()
	// Wait for work without processMu, which Replace (a producer) needs.
	f.mu.Lock()
	for len(f.queue)-f.head == 0 {
		if err := ctx.Err(); err != nil {
			f.mu.Unlock()
			return err
		}
		if f.closed {
			f.mu.Unlock()
			return ErrFIFOClosed
		}
		f.cond.Wait()
	}
	f.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	// Producers only add, and this is the only consumer: the queue is still
	// non-empty once both locks are held.
	f.processMu.Lock()
	defer f.processMu.Unlock()
	f.mu.Lock()
	n := len(f.queue) - f.head
	if max > 0 && n > max {
		n = max
	}
	batch := make([]Popped[T], n)
	f.inFlight = make(map[string]struct{}, n)
	initial := 0
	for i := range batch {
		key := f.queue[f.head]
		f.queue[f.head] = ""
		f.head++
		// Keys are counted off the initial population only once processed,
		// so HasSynced cannot turn true before the cache holds them.
		isInitial := !f.populated || f.initialPopulationCount-i > 0
		if isInitial && f.initialPopulationCount-i > 0 {
			initial++
		}
		batch[i] = Popped[T]{Key: key, Deltas: f.items[key], IsInInitialList: isInitial}
		delete(f.items, key)
		f.inFlight[key] = struct{}{}
	}
	f.backlog.Store(f.head < len(f.queue))
	if f.head == len(f.queue) {
		// Empty: reuse a small array, free a big one (an initial list).
		f.queue, f.head = f.queue[:0], 0
		if cap(f.queue) > 1024 {
			f.queue = nil
			// Go maps never shrink: drop the one an initial list grew.
			f.items = map[string]Deltas[T]{}
		}
	} else if f.head > 1024 && f.head*2 >= len(f.queue) {
		// Compact so that the backing array does not grow forever.
		f.queue = append([]string(nil), f.queue[f.head:]...)
		f.head = 0
	}
	f.mu.Unlock()

	err := process(batch)

	f.mu.Lock()
	f.inFlight = nil
	f.initialPopulationCount -= initial
	f.mu.Unlock()
	return err
}
