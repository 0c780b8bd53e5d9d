package memory

import (
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
)

// version is one state of a key: its bytes from revision rev on, or its
// deletion at rev when value is nil.
type version struct {
	rev   uint64
	value []byte
}

// record is the history of one key. versions is in ascending revision order
// and never empty while the record is indexed; its bytes are never modified.
type record struct {
	key      string
	versions []version

	// cache holds the newest version decoded by one store, so that reads
	// deep-copy it instead of decoding the bytes again. It is read only,
	// tagged with the revision it was decoded from, and dropped by the next
	// write of the key; older versions are always decoded from their bytes.
	cache atomic.Pointer[cached]
}

// cached is a version of a record decoded by owner. obj is shared: read only.
type cached struct {
	owner *store
	rev   uint64
	obj   runtime.Object
}

// latest returns the newest version.
func (r *record) latest() version { return r.versions[len(r.versions)-1] }

// at returns the version of the key in the snapshot at rev; its value is nil
// when the key did not exist then.
func (r *record) at(rev uint64) version {
	for i := len(r.versions) - 1; i >= 0; i-- {
		if v := r.versions[i]; v.rev <= rev {
			return v
		}
	}
	return version{}
}

// event is one write in the revision log. Its fields are set before it is
// published and never change; dec is filled by the first watcher that needs it.
type event struct {
	rev   uint64
	key   string
	value []byte // nil for a delete
	prev  []byte // nil for a create
	at    time.Time

	mu  sync.Mutex // serializes the decoding into dec
	dec atomic.Pointer[decoded]
}

// decoded is an event decoded by one resource's store, shared by all of
// that store's watchers. Its objects are read only.
type decoded struct {
	owner *store
	obj   runtime.Object // nil for a delete
	prev  runtime.Object // nil for a create
	err   error

	// tomb and tombRaw are prev stamped with the event's revision, the object
	// a Deleted event carries; made on first use under event.mu.
	tomb    runtime.Object
	tombRaw []byte
	tombErr error
	tombSet bool
}

// decodedWindow is how many of the newest events keep their decoded objects.
const decodedWindow = 1024

// kv is a key and its bytes at some snapshot: the version of rec written
// at rev.
type kv struct {
	key   string
	value []byte
	rec   *record
	rev   uint64
	// latest says rev was the key's newest version when it was read.
	latest bool
}

// putLocked records value (nil to delete) at key as revision b.rev+1, logs
// the event, compacts what fell out of the history and wakes the watchers.
// prev is the key's current bytes, nil when it does not exist.
func (b *Backend) putLocked(key string, value, prev []byte) uint64 {
	rev := b.rev + 1
	rec := b.items[key]
	if rec == nil {
		rec = &record{key: key}
		b.items[key] = rec
		b.tree.ReplaceOrInsert(rec)
	}
	rec.versions = append(rec.versions, version{rev: rev, value: value})
	rec.cache.Store(nil)
	ev := &event{rev: rev, key: key, value: value, prev: prev, at: b.clock.Now()}
	b.all.log = append(b.all.log, ev)
	if n := len(b.all.log); n > decodedWindow {
		// Only the recent events keep their decoded objects; a watcher
		// that lags further decodes again rather than the backend holding
		// a decoded copy of the whole history.
		b.all.log[n-decodedWindow-1].dec.Store(nil)
	}
	f := b.feedLocked(key)
	f.log = append(f.log, ev)
	b.rev = rev
	b.revNow.Store(rev)
	if rec.versions[0].rev <= b.minRev && len(rec.versions) > 1 {
		// Versions no readable snapshot can see.
		b.compactKeyLocked(key)
	}
	b.trimHistoryLocked()
	b.all.wakeLocked(false)
	f.wakeLocked(false)
	return rev
}

// trimHistoryLocked compacts the revisions beyond HistoryRevisions or older
// than HistoryDuration.
func (b *Backend) trimHistoryLocked() {
	target := b.minRev
	log := b.all.log
	if n := len(log); n > b.historyRevisions {
		target = log[n-b.historyRevisions-1].rev
	}
	deadline := b.clock.Now().Add(-b.historyDuration)
	for i := int(target - b.minRev); i < len(log) && log[i].at.Before(deadline); i++ {
		target = log[i].rev
	}
	if target > b.minRev {
		b.compactLocked(target)
	}
}

// compactLocked makes rev the oldest readable revision, dropping the log
// before it and every version no snapshot from rev on can see.
func (b *Backend) compactLocked(rev uint64) {
	if rev <= b.minRev {
		return
	}
	n := int(rev - b.minRev)
	dropped := b.all.log[:n]
	// Re-slice rather than copy: watchers may be reading the old elements.
	b.all.log = b.all.log[n:]
	b.all.dropped = rev
	b.minRev = rev
	for _, ev := range dropped {
		// Each feed's log is in revision order, so ev is at its front.
		f := b.feedLocked(ev.key)
		f.log = f.log[1:]
		f.dropped = ev.rev
		b.compactKeyLocked(ev.key)
	}
}

// compactKeyLocked drops the versions of key older than the one visible at
// minRev, and that one too when it is a deletion.
func (b *Backend) compactKeyLocked(key string) {
	rec := b.items[key]
	if rec == nil {
		return
	}
	i := -1
	for j, v := range rec.versions {
		if v.rev > b.minRev {
			break
		}
		i = j
	}
	if i < 0 {
		return
	}
	keep := rec.versions[i:]
	if keep[0].value == nil {
		keep = keep[1:]
	}
	if len(keep) == 0 {
		delete(b.items, key)
		b.tree.Delete(rec)
		return
	}
	if len(keep) != len(rec.versions) {
		// Copy so the dropped versions' bytes can be freed.
		rec.versions = append(make([]version, 0, len(keep)+1), keep...)
	}
}

// currentLocked returns the newest bytes of key and their revision; nil
// bytes when it does not exist, with revision 0 when nothing is recorded.
func (b *Backend) currentLocked(key string) ([]byte, uint64) {
	c := b.currentKVLocked(key)
	return c.value, c.rev
}

// currentKVLocked returns the newest version of key; its value is nil when
// the key does not exist, and its rev 0 when nothing is recorded.
func (b *Backend) currentKVLocked(key string) kv {
	rec := b.items[key]
	if rec == nil {
		return kv{key: key}
	}
	v := rec.latest()
	return kv{key: key, value: v.value, rec: rec, rev: v.rev, latest: true}
}

// rangeLocked appends to out the keys in [from, end) (to the last key when
// end is "") that exist at rev, with their bytes, stopping after max when
// max > 0.
func (b *Backend) rangeLocked(from, end string, rev uint64, max int, out []kv) []kv {
	b.tree.AscendGreaterOrEqual(&record{key: from}, func(r *record) bool {
		if end != "" && r.key >= end {
			return false
		}
		if v := r.at(rev); v.value != nil {
			out = append(out, kv{key: r.key, value: v.value, rec: r, rev: v.rev, latest: v.rev == r.latest().rev})
		}
		return max <= 0 || len(out) < max
	})
	return out
}

// feed is a revision log of a set of keys and the channel that wakes the
// watchers reading it. Its log's elements are never overwritten: compaction
// re-slices the front and appends allocate as needed, so a watcher may read
// a slice of it taken under Backend.mu after releasing the lock.
type feed struct {
	// log holds every change of the feed's keys after revision dropped, in
	// revision order.
	log     []*event
	dropped uint64
	// wake is closed and replaced when a write or a progress request should
	// wake the watchers that hold it; wakeUsed says a watcher took it since.
	wake     chan struct{}
	wakeUsed atomic.Bool
}

func newFeed() *feed { return &feed{wake: make(chan struct{})} }

// wakeLocked wakes the watchers waiting on wake; force wakes even when no
// watcher took the channel since the last wake.
func (f *feed) wakeLocked(force bool) {
	if force || f.wakeUsed.Load() {
		close(f.wake)
		f.wake = make(chan struct{})
		f.wakeUsed.Store(false)
	}
}

// feedName returns the top-level segment of a key or prefix: "/pods" for
// "/pods/default/x", "/pods/" and "/pods"; "" for "/".
func feedName(key string) string {
	if i := strings.IndexByte(key[1:], '/'); i >= 0 {
		return key[:i+1]
	}
	return key
}

// feedLocked returns the feed of key's top-level segment, the whole log for
// "/"; mu must be held for writing when the feed may not exist yet.
func (b *Backend) feedLocked(key string) *feed {
	name := feedName(key)
	if name == "/" {
		return b.all
	}
	f := b.feeds[name]
	if f == nil {
		f = newFeed()
		b.feeds[name] = f
	}
	return f
}

// eventsFrom returns f's events from revision next on, the revision they
// run up to (every change of f's keys up to cur is in evs), the channel
// closed at f's next change and the progress generation. ok is false when
// a change of f's keys at or after revision next has been compacted.
func (b *Backend) eventsFrom(f *feed, next uint64) (evs []*event, cur uint64, wake <-chan struct{}, gen uint64, closed, ok bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return nil, 0, nil, 0, true, true
	}
	if next <= f.dropped {
		return nil, 0, nil, 0, false, false
	}
	f.wakeUsed.Store(true)
	log := f.log
	i := sort.Search(len(log), func(i int) bool { return log[i].rev >= next })
	return log[i:len(log):len(log)], b.rev, f.wake, b.progressGen, false, true
}
