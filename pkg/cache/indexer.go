package cache

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/btree"
)

// NamespaceIndex is the name of the index every Indexer has: it maps a
// namespace to the objects in it. It costs no memory: objects are kept in
// (namespace, name) order, so a namespace's objects are already one
// contiguous range of the store.
const NamespaceIndex = "namespace"

// IndexFunc computes the index values of an object. It must be a pure
// function of the object.
type IndexFunc[T Object] func(obj T) ([]string, error)

// Indexers names index functions.
type Indexers[T Object] map[string]IndexFunc[T]

// NamespaceIndexFunc indexes objects by namespace.
func NamespaceIndexFunc[T Object](obj T) ([]string, error) {
	return []string{obj.GetNamespace()}, nil
}

// IndexerConfig configures an Indexer.
type IndexerConfig[T Object] struct {
	// Indexers are extra named index functions. NamespaceIndex is always
	// present and may not be redefined.
	Indexers Indexers[T]
}

// btreeDegree trades the cost of a copy-on-write path copy (smaller nodes
// copy less) against memory (bigger nodes waste less on node headers and
// half-empty nodes): at 32, 100k entries cost ~40-50 bytes each.
const btreeDegree = 32

// entry is one stored object, ordered by (namespace, name) read from the
// object itself, so that the store keeps no key strings of its own (16
// bytes per object); or, when probe is set, a search key.
type entry[T Object] struct {
	obj   T
	probe *nsName
}

// nsName is a search key.
type nsName struct{ namespace, name string }

func (e entry[T]) nsName() (string, string) {
	if e.probe != nil {
		return e.probe.namespace, e.probe.name
	}
	return e.obj.GetNamespace(), e.obj.GetName()
}

// key returns the entry's ObjectKey.
func (e entry[T]) key() string {
	ns, name := e.nsName()
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

func lessEntry[T Object](a, b entry[T]) bool {
	ans, aname := a.nsName()
	bns, bname := b.nsName()
	if ans != bns {
		return ans < bns
	}
	return aname < bname
}

// probeAt returns a search key for (namespace, name).
func probeAt[T Object](namespace, name string) entry[T] {
	return entry[T]{probe: &nsName{namespace, name}}
}

// probeKey returns a search key for an ObjectKey; an invalid key finds
// nothing.
func probeKey[T Object](key string) entry[T] {
	ns, name, found := strings.Cut(key, "/")
	if !found {
		return probeAt[T]("", key)
	}
	if name == "" || strings.Contains(name, "/") || ns == "" {
		// No object has this key: search for what sorts before everything.
		return probeAt[T]("", "")
	}
	return probeAt[T](ns, name)
}

// indexEntry records that an object has index value value. An index is one
// ordered tree of these, so the objects of a value are a contiguous range.
type indexEntry[T Object] struct {
	value string
	e     entry[T]
}

func lessIndexEntry[T Object](a, b indexEntry[T]) bool {
	if a.value != b.value {
		return a.value < b.value
	}
	return lessEntry(a.e, b.e)
}

// firstOf returns a search key before every entry of value.
func firstOf[T Object](value string) indexEntry[T] {
	return indexEntry[T]{value: value, e: probeAt[T]("", "")}
}

// snapshot is an immutable view of the whole store. Its trees are clones
// that are never written again, so any number of readers may walk them while
// the writer goes on.
type snapshot[T Object] struct {
	items    *btree.BTreeG[entry[T]]
	indices  map[string]*btree.BTreeG[indexEntry[T]]
	indexers Indexers[T]
}

// Indexer is a thread-safe store of objects keyed by ObjectKey, with named
// indexes. It is safe for concurrent use.
//
// Writes (Add, Update, Delete, Replace, AddIndexers) are serialised by a
// mutex; each publishes a new immutable snapshot built from persistent
// (copy-on-write) B-trees, so the cost of a write is O(log n) whatever the
// size of the store. Reads take no lock at all: they load the current
// snapshot atomically and walk it, so readers never block the writer nor
// each other, and every read sees one consistent state.
//
// Objects are shared: the Indexer stores and returns the very pointers it was
// given. Callers must not mutate an object after passing it to the Indexer,
// nor any object it returns; DeepCopy first.
type Indexer[T Object] struct {
	// mu serialises writers. Readers never take it.
	mu sync.Mutex
	// items and indices are the writer's trees, guarded by mu. After every
	// write they are cloned into a new snapshot; cloning is O(1) and makes
	// the next write copy the nodes it touches instead of changing the
	// published ones.
	items    *btree.BTreeG[entry[T]]
	indices  map[string]*btree.BTreeG[indexEntry[T]]
	indexers Indexers[T] // guarded by mu; replaced, never mutated
	// snap is the latest published snapshot.
	snap atomic.Pointer[snapshot[T]]
	// backlog, if set, reports whether changes wait to be written (the
	// informer's queue is not empty); scans then yield more often.
	backlog func() bool
}

// NewIndexer returns an empty Indexer.
func NewIndexer[T Object](cfg IndexerConfig[T]) (*Indexer[T], error) {
	idx := &Indexer[T]{
		items:    btree.NewG(btreeDegree, lessEntry[T]),
		indices:  map[string]*btree.BTreeG[indexEntry[T]]{},
		indexers: Indexers[T]{NamespaceIndex: NamespaceIndexFunc[T]},
	}
	if err := idx.AddIndexers(cfg.Indexers); err != nil {
		return nil, err
	}
	return idx, nil
}

// publishLocked publishes the writer's trees as the new snapshot.
func (x *Indexer[T]) publishLocked() {
	s := &snapshot[T]{
		items:    x.items.Clone(),
		indices:  make(map[string]*btree.BTreeG[indexEntry[T]], len(x.indices)),
		indexers: x.indexers,
	}
	for name, t := range x.indices {
		s.indices[name] = t.Clone()
	}
	x.snap.Store(s)
}

// AddIndexers adds index functions and indexes the current content with them.
// It fails, changing nothing, if a name is already in use or an index
// function fails on a stored object.
func (x *Indexer[T]) AddIndexers(indexers Indexers[T]) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(indexers) == 0 && x.snap.Load() != nil {
		return nil
	}
	all := make(Indexers[T], len(x.indexers)+len(indexers))
	for name, f := range x.indexers {
		all[name] = f
	}
	built := map[string]*btree.BTreeG[indexEntry[T]]{}
	for name, f := range indexers {
		if _, ok := all[name]; ok {
			return fmt.Errorf("indexer %q already exists", name)
		}
		if f == nil {
			return fmt.Errorf("indexer %q has a nil function", name)
		}
		all[name] = f
		t := btree.NewG(btreeDegree, lessIndexEntry[T])
		var err error
		x.items.Ascend(func(e entry[T]) bool {
			var values []string
			values, err = f(e.obj)
			if err != nil {
				err = fmt.Errorf("index %q of %q: %w", name, e.key(), err)
				return false
			}
			for _, v := range values {
				t.ReplaceOrInsert(indexEntry[T]{value: v, e: e})
			}
			return true
		})
		if err != nil {
			return err
		}
		built[name] = t
	}
	for name, t := range built {
		x.indices[name] = t
	}
	x.indexers = all
	x.publishLocked()
	return nil
}

// indexValuesLocked computes every index value of obj, in the order of
// names, so that a write either applies fully or not at all.
func (x *Indexer[T]) indexValuesLocked(obj T, names []string) ([][]string, error) {
	out := make([][]string, len(names))
	for i, name := range names {
		v, err := x.indexers[name](obj)
		if err != nil {
			key, _ := ObjectKey(obj)
			return nil, fmt.Errorf("index %q of %q: %w", name, key, err)
		}
		out[i] = v
	}
	return out, nil
}

// Add inserts or replaces obj. It fails, changing nothing, if obj has no key
// or an index function fails.
func (x *Indexer[T]) Add(obj T) error { return x.Update(obj) }

// Update is Add: it inserts or replaces obj.
func (x *Indexer[T]) Update(obj T) error {
	var err error
	x.Batch(func(w *IndexerWriter[T]) { err = w.Put(obj) })
	return err
}

// Delete removes the object with obj's key, if present.
func (x *Indexer[T]) Delete(obj T) error {
	if isNil(obj) {
		return fmt.Errorf("nil object")
	}
	key, err := ObjectKey(obj)
	if err != nil {
		return err
	}
	x.DeleteKey(key)
	return nil
}

// DeleteKey removes the object under key, if present.
func (x *Indexer[T]) DeleteKey(key string) {
	x.Batch(func(w *IndexerWriter[T]) { w.DeleteKey(key) })
}

// Batch runs f with a writer whose changes readers see all at once, when f
// returns: one snapshot is published for the whole batch, which makes many
// small writes much cheaper. Writers are serialised; f must not call the
// Indexer's own write methods (it would deadlock) and must not keep w.
func (x *Indexer[T]) Batch(f func(w *IndexerWriter[T])) {
	x.mu.Lock()
	defer x.mu.Unlock()
	w := &IndexerWriter[T]{x: x}
	f(w)
	w.x = nil
	if w.changed {
		x.publishLocked()
	}
}

// IndexerWriter writes to an Indexer inside Batch. Its reads see the
// batch's own writes.
type IndexerWriter[T Object] struct {
	x       *Indexer[T]
	changed bool
	names   []string // index names, in a fixed order
}

// GetByKey returns the object under key, including the batch's writes.
func (w *IndexerWriter[T]) GetByKey(key string) (T, bool) {
	e, ok := w.x.items.Get(probeKey[T](key))
	return e.obj, ok
}

// Put inserts or replaces obj. It fails, changing nothing, if obj has no key
// or an index function fails.
func (w *IndexerWriter[T]) Put(obj T) error {
	if isNil(obj) {
		return fmt.Errorf("nil object")
	}
	if obj.GetName() == "" {
		return fmt.Errorf("object has no name")
	}
	x := w.x
	if w.names == nil {
		w.names = make([]string, 0, len(x.indices))
		for name := range x.indices {
			w.names = append(w.names, name)
		}
	}
	values, err := x.indexValuesLocked(obj, w.names)
	if err != nil {
		return err
	}
	e := entry[T]{obj: obj}
	old, had := x.items.ReplaceOrInsert(e)
	w.changed = true
	for i, name := range w.names {
		t := x.indices[name]
		if had {
			// Index functions are pure: they yield what they yielded
			// when old was stored, and did not fail then.
			oldValues, _ := x.indexers[name](old.obj)
			for _, v := range oldValues {
				if !slices.Contains(values[i], v) {
					t.Delete(indexEntry[T]{value: v, e: old})
				}
			}
		}
		// Entries of values kept are replaced too, so that they point at
		// the new object and do not keep the old one alive.
		for _, v := range values[i] {
			t.ReplaceOrInsert(indexEntry[T]{value: v, e: e})
		}
	}
	return nil
}

// DeleteKey removes the object under key, if present.
func (w *IndexerWriter[T]) DeleteKey(key string) {
	x := w.x
	old, had := x.items.Delete(probeKey[T](key))
	if !had {
		return
	}
	w.changed = true
	x.unindexLocked(old)
}

// unindexLocked removes the index entries of old, stored under key. Index
// functions are pure, so they yield what they yielded when old was stored.
func (x *Indexer[T]) unindexLocked(old entry[T]) {
	for name, t := range x.indices {
		vs, err := x.indexers[name](old.obj)
		if err != nil {
			continue // it did not fail when old was stored; nothing to undo
		}
		for _, v := range vs {
			t.Delete(indexEntry[T]{value: v, e: old})
		}
	}
}

// Replace atomically swaps the whole content for list: readers see either
// the old content or the new one. It fails, changing nothing, if an object
// has no key or an index function fails.
func (x *Indexer[T]) Replace(list []T) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	// Insert in a scattered order: lists usually come sorted by key, and
	// sorted insertion leaves every B-tree node half empty (twice the
	// memory); a stride coprime with the length visits each object once.
	// Duplicate keys (the last one wins) need list order: rebuild in order.
	items, indices, dup, err := x.buildLocked(list, scatterStride(len(list)))
	if err == nil && dup {
		items, indices, _, err = x.buildLocked(list, 1)
	}
	if err != nil {
		return err
	}
	x.items, x.indices = items, indices
	x.publishLocked()
	return nil
}

// buildLocked builds the trees of list, visiting it with stride; dup
// reports a duplicate key (the later visited object won).
func (x *Indexer[T]) buildLocked(list []T, stride int) (*btree.BTreeG[entry[T]], map[string]*btree.BTreeG[indexEntry[T]], bool, error) {
	items := btree.NewG(btreeDegree, lessEntry[T])
	indices := make(map[string]*btree.BTreeG[indexEntry[T]], len(x.indices))
	names := make([]string, 0, len(x.indices))
	for name := range x.indices {
		indices[name] = btree.NewG(btreeDegree, lessIndexEntry[T])
		names = append(names, name)
	}
	dup := false
	for i := range list {
		obj := list[(i*stride)%len(list)]
		if isNil(obj) {
			return nil, nil, false, fmt.Errorf("nil object in list")
		}
		if obj.GetName() == "" {
			return nil, nil, false, fmt.Errorf("object has no name")
		}
		if old, had := items.ReplaceOrInsert(entry[T]{obj: obj}); had {
			dup = true
			for name := range indices {
				vs, _ := x.indexers[name](old.obj)
				for _, v := range vs {
					indices[name].Delete(indexEntry[T]{value: v, e: old})
				}
			}
		}
		values, err := x.indexValuesLocked(obj, names)
		if err != nil {
			return nil, nil, false, err
		}
		for i, vs := range values {
			for _, v := range vs {
				indices[names[i]].ReplaceOrInsert(indexEntry[T]{value: v, e: entry[T]{obj: obj}})
			}
		}
	}
	return items, indices, dup, nil
}

// scatterStride returns a stride coprime with n, near n/φ, for Replace's
// insertion order (1 for small n).
func scatterStride(n int) int {
	if n < 64 {
		return 1
	}
	s := int(float64(n)*0.618) | 1
	for gcd(s, n) != 1 {
		s += 2
	}
	return s
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// load returns the current snapshot.
func (x *Indexer[T]) load() *snapshot[T] { return x.snap.Load() }

// GetByKey returns the object stored under key. It never blocks.
func (x *Indexer[T]) GetByKey(key string) (T, bool) {
	e, ok := x.load().items.Get(probeKey[T](key))
	return e.obj, ok
}

// Get returns the stored object with obj's key.
func (x *Indexer[T]) Get(obj T) (T, bool, error) {
	key, err := ObjectKey(obj)
	if err != nil {
		var zero T
		return zero, false, err
	}
	got, ok := x.GetByKey(key)
	return got, ok, nil
}

// Len returns the number of stored objects.
func (x *Indexer[T]) Len() int { return x.load().items.Len() }

// List returns every stored object, ordered by namespace then name, in a
// new slice. It takes no lock (see yieldEvery for how scans share the
// processor); the objects are shared and must not be mutated.
func (x *Indexer[T]) List() []T {
	s := x.load()
	out := make([]T, 0, s.items.Len())
	s.items.Ascend(func(e entry[T]) bool {
		out = append(out, e.obj)
		x.yieldEvery(len(out))
		return true
	})
	return out
}

// yieldEvery yields the processor before the first and every 256th object
// of a scan, and every 8th while writes are waiting; a scan that starts
// while writes are waiting first yields up to four times for them. Scans
// take no lock, so nothing else would stop a crowd of goroutines listing in
// a loop from keeping every processor busy for whole scheduler time slices
// (10ms) while the informer's goroutines, which hand events to one another,
// wait for a turn: with few cores that starves event processing. A yield costs a few
// hundred nanoseconds and lets the writer progress between readers' steps:
// readers give way while writes are pending, as under a write-preferring
// lock, except that the writer never waits for a reader.
func (x *Indexer[T]) yieldEvery(n int) {
	if n == 1 && x.backlog != nil {
		for i := 0; i < 4 && x.backlog(); i++ {
			runtime.Gosched()
		}
		return
	}
	if n%256 == 1 || (n%8 == 1 && x.backlog != nil && x.backlog()) {
		runtime.Gosched()
	}
}

// ListKeys returns every key, ordered by namespace then name, in a new slice.
func (x *Indexer[T]) ListKeys() []string {
	s := x.load()
	out := make([]string, 0, s.items.Len())
	s.items.Ascend(func(e entry[T]) bool {
		out = append(out, e.key())
		x.yieldEvery(len(out))
		return true
	})
	return out
}

// Range calls f for every stored object in namespace-then-name order
// until f returns false. It walks one snapshot without copying it, so it is the cheapest way to
// read everything; f must not mutate the objects.
func (x *Indexer[T]) Range(f func(key string, obj T) bool) {
	n := 0
	x.load().items.Ascend(func(e entry[T]) bool {
		n++
		x.yieldEvery(n)
		return f(e.key(), e.obj)
	})
}

// indexEntries calls f with the entries indexed under value in the named
// index, in (namespace, name) order.
func (s *snapshot[T]) indexEntries(name, value string, f func(e entry[T]) bool) error {
	if name == NamespaceIndex {
		s.namespaceEntries(value, f)
		return nil
	}
	t, ok := s.indices[name]
	if !ok {
		return fmt.Errorf("index %q does not exist", name)
	}
	t.AscendGreaterOrEqual(firstOf[T](value), func(ie indexEntry[T]) bool {
		if ie.value != value {
			return false
		}
		return f(ie.e)
	})
	return nil
}

// namespaceEntries calls f with the entries of namespace ns in order: they
// are the contiguous range from (ns, "") to (ns+"\x00", "").
func (s *snapshot[T]) namespaceEntries(ns string, f func(entry[T]) bool) {
	s.items.AscendRange(probeAt[T](ns, ""), probeAt[T](ns+"\x00", ""), f)
}

// ByIndex returns the objects whose named index contains value, ordered by
// namespace and name.
func (x *Indexer[T]) ByIndex(name, value string) ([]T, error) {
	var out []T
	err := x.load().indexEntries(name, value, func(e entry[T]) bool {
		out = append(out, e.obj)
		x.yieldEvery(len(out))
		return true
	})
	return out, err
}

// IndexKeys returns the keys of the objects whose named index contains
// value, ordered by namespace and name.
func (x *Indexer[T]) IndexKeys(name, value string) ([]string, error) {
	var out []string
	err := x.load().indexEntries(name, value, func(e entry[T]) bool {
		out = append(out, e.key())
		return true
	})
	return out, err
}

// Index returns the objects that share at least one value of the named index
// with obj, ordered by namespace and name, each once.
func (x *Indexer[T]) Index(name string, obj T) ([]T, error) {
	s := x.load()
	f, ok := s.indexers[name]
	if !ok {
		return nil, fmt.Errorf("index %q does not exist", name)
	}
	values, err := f(obj)
	if err != nil {
		return nil, err
	}
	seen := map[nsName]bool{}
	var found []entry[T]
	for _, v := range values {
		if err := s.indexEntries(name, v, func(e entry[T]) bool {
			ns, n := e.nsName()
			if !seen[nsName{ns, n}] {
				seen[nsName{ns, n}] = true
				found = append(found, e)
			}
			return true
		}); err != nil {
			return nil, err
		}
	}
	if len(values) > 1 {
		slices.SortFunc(found, func(a, b entry[T]) int {
			switch {
			case lessEntry(a, b):
				return -1
			case lessEntry(b, a):
				return 1
			}
			return 0
		})
	}
	out := make([]T, len(found))
	for i, e := range found {
		out[i] = e.obj
	}
	return out, nil
}

// ListIndexFuncValues returns the distinct values of the named index, sorted.
// It returns nil for an unknown index.
func (x *Indexer[T]) ListIndexFuncValues(name string) []string {
	s := x.load()
	if name == NamespaceIndex {
		return s.namespaces()
	}
	t, ok := s.indices[name]
	if !ok {
		return nil
	}
	var out []string
	next := firstOf[T]("")
	for {
		found := false
		t.AscendGreaterOrEqual(next, func(e indexEntry[T]) bool {
			out = append(out, e.value)
			found = true
			return false
		})
		if !found {
			return out
		}
		// The smallest value greater than the last one found: skip its entries.
		next = firstOf[T](out[len(out)-1] + "\x00")
	}
}

// namespaces returns the distinct namespaces, sorted, skipping over each
// namespace's range.
func (s *snapshot[T]) namespaces() []string {
	var out []string
	next := probeAt[T]("", "")
	for {
		found := false
		s.items.AscendGreaterOrEqual(next, func(e entry[T]) bool {
			ns, _ := e.nsName()
			out = append(out, ns)
			found = true
			return false
		})
		if !found {
			return out
		}
		next = probeAt[T](out[len(out)-1]+"\x00", "")
	}
}

// Indexers returns the index functions in use. The map must not be modified.
func (x *Indexer[T]) Indexers() Indexers[T] { return x.load().indexers }
