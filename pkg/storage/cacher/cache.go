package cacher

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/google/btree"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kplane/kplane/pkg/storage"
)

// entry is one object in a cache's state. obj is shared: read only.
type entry struct {
	key string
	obj runtime.Object
	enc *encoded // obj and its encoding, made on first use
}

// encoded is an object and its encoding by the resource's Codec, made at
// most once and shared by every watcher that sends the object.
type encoded struct {
	obj  runtime.Object
	once sync.Once
	raw  []byte
}

func newEncoded(obj runtime.Object, raw []byte) *encoded {
	e := &encoded{obj: obj, raw: raw}
	if raw != nil {
		e.once.Do(func() {})
	}
	return e
}

// bytes returns the encoding, or nil when the codec fails (the watcher's
// reader then encodes Object itself).
func (e *encoded) bytes(codec storage.Codec) []byte {
	e.once.Do(func() {
		if raw, err := codec.Encode(e.obj); err == nil {
			e.raw = raw
		}
	})
	return e.raw
}

func entryLess(a, b *entry) bool { return a.key < b.key }

// event is one change in a cache's window, shared by every watcher.
type event struct {
	key  string
	rev  uint64
	cur  runtime.Object // the new state; nil for a deletion
	prev runtime.Object // the state before; nil for a creation
	// curEnc encodes cur; tombEnc the tombstone.
	curEnc, tombEnc *encoded

	// tombOnce makes tombEnc, when the backend did not send it: prev
	// stamped with rev, what a watcher that loses sight of the object
	// gets as a Deleted event.
	tombOnce sync.Once
}

func (e *event) tombstone() *encoded {
	e.tombOnce.Do(func() {
		if e.tombEnc != nil {
			return
		}
		t := e.prev.DeepCopyObject()
		if m, err := meta.Accessor(t); err == nil {
			m.SetResourceVersion(strconv.FormatUint(e.rev, 10))
		}
		e.tombEnc = newEncoded(t, nil)
	})
	return e.tombEnc
}

// progressRequester is a backend that can ask its watches for a Bookmark
// at its current revision now, as the etcd backend can.
type progressRequester interface {
	RequestWatchProgress(ctx context.Context) error
}

// compactor is a backend that compacts on demand.
type compactor interface {
	Compact(ctx context.Context, rev uint64) error
}

// cache holds the current state and the recent events of one resource
// root ("/pods"), fed by one backend watch of it.
type cache struct {
	s    *store
	root string
	// prefix is root + "/": every key the cache holds starts with it.
	prefix string

	mu sync.RWMutex
	// ready is false until the first list and again while relisting.
	ready bool
	// changed is closed (and replaced) whenever rev or ready changes.
	changed chan struct{}
	// rev is the revision the state is current to.
	rev   uint64
	state *btree.BTreeG[*entry]
	// window is a ring of the latest events, oldest at head; it holds
	// every change after windowStart.
	window      []*event
	head, count int
	windowStart uint64
	watchers    map[*watcher]struct{}
	// written is the newest revision a write through this Cacher to the
	// cache's keys got; reads at "0" wait for the cache to reach it.
	written uint64
}

func newCache(s *store, root string) *cache {
	return &cache{
		s:        s,
		root:     root,
		prefix:   root + "/",
		changed:  make(chan struct{}),
		state:    btree.NewG(32, entryLess),
		window:   make([]*event, s.c.cfg.WindowSize),
		watchers: map[*watcher]struct{}{},
	}
}

// notifyLocked wakes everyone waiting for the cache to change.
func (c *cache) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// run keeps the cache in sync with the backend until ctx ends: list, then
// watch from the list's revision; relist after any watch failure.
func (c *cache) run(ctx context.Context) {
	cfg := c.s.c.cfg
	delay := cfg.MinRetryDelay
	for {
		err := c.listAndWatch(ctx)
		c.reset()
		if ctx.Err() != nil {
			return
		}
		c.s.c.logger.Warn("cacher: relisting after watch failure", "root", c.root, "error", err)
		t := cfg.Clock.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		delay = min(2*delay, cfg.MaxRetryDelay)
		if err == nil {
			delay = cfg.MinRetryDelay
		}
	}
}

// listAndWatch lists the root, then follows it with backend watches. A
// watch that fails for any reason but an Expired revision is re-opened
// from the cache's revision, so the cache's watchers never notice; an
// Expired one (or a change the cache cannot apply) returns, and run
// relists.
func (c *cache) listAndWatch(ctx context.Context) error {
	list := c.s.rc.NewListFunc()
	if err := c.s.inner.GetList(ctx, c.root, storage.ListOptions{Recursive: true}, list); err != nil {
		return fmt.Errorf("list %s: %w", c.root, err)
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return err
	}
	rev, err := strconv.ParseUint(lm.GetResourceVersion(), 10, 64)
	if err != nil {
		return fmt.Errorf("list %s: bad resourceVersion %q", c.root, lm.GetResourceVersion())
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	if err := c.replace(items, rev); err != nil {
		return err
	}
	cfg := c.s.c.cfg
	delay := cfg.MinRetryDelay
	for {
		progressed, err := c.watchFrom(ctx, rev)
		if ctx.Err() != nil {
			return nil
		}
		var re relistError
		if errors.As(err, &re) {
			return re.error
		}
		c.mu.RLock()
		rev = c.rev
		c.mu.RUnlock()
		if progressed {
			delay = cfg.MinRetryDelay
		}
		c.s.c.logger.Info("cacher: re-watching", "root", c.root, "revision", rev, "error", err)
		t := cfg.Clock.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
		delay = min(2*delay, cfg.MaxRetryDelay)
	}
}

// wantsBookmarks reports whether any watcher asked for bookmarks.
func (c *cache) wantsBookmarks() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for w := range c.watchers {
		if w.opts.ProgressNotify {
			return true
		}
	}
	return false
}

// relistError is a watch failure that only a fresh list can recover from.
type relistError struct{ error }

// watchFrom follows one backend watch from rev into the cache until it
// ends. progressed reports whether it delivered anything.
func (c *cache) watchFrom(ctx context.Context, rev uint64) (progressed bool, err error) {
	noInitial := false
	w, err := c.s.inner.Watch(ctx, c.root, storage.ListOptions{
		Recursive:         true,
		ResourceVersion:   strconv.FormatUint(rev, 10),
		ProgressNotify:    true,
		SendInitialEvents: &noInitial,
		// The state holds every previous object a Modified event needs.
		NoPrevObject: true,
	})
	if err != nil {
		if storage.IsExpired(err) {
			return false, relistError{err}
		}
		return false, fmt.Errorf("watch %s: %w", c.root, err)
	}
	defer w.Stop()
	// Ask the backend for a bookmark now and then, so that watchers that
	// want bookmarks get them while their keys are idle.
	var tick <-chan time.Time
	if _, ok := c.s.c.backend.(progressRequester); ok {
		t := c.s.c.cfg.Clock.NewTicker(c.s.c.cfg.BookmarkInterval)
		defer t.Stop()
		tick = t.C()
	}
	for {
		var ev storage.Event
		var ok bool
		select {
		case ev, ok = <-w.ResultChan():
		case <-tick:
			if c.wantsBookmarks() {
				// A failed request only delays a bookmark.
				_ = c.s.c.backend.(progressRequester).RequestWatchProgress(ctx)
			}
			continue
		}
		if !ok {
			break
		}
		switch ev.Type {
		case watch.Error:
			err := fmt.Errorf("watch %s from %d: %v", c.root, rev, errorMessage(ev.Object))
			if st, ok := ev.Object.(*metav1.Status); ok && st.Code == http.StatusGone {
				return progressed, relistError{err}
			}
			return progressed, err
		case watch.Bookmark:
			r, err := objectRV(ev.Object)
			if err != nil {
				return progressed, relistError{err}
			}
			c.bookmark(r)
		case watch.Added, watch.Modified, watch.Deleted:
			if err := c.apply(ev); err != nil {
				return progressed, relistError{err}
			}
		}
		progressed = true
	}
	return progressed, errors.New("watch ended")
}

func errorMessage(obj runtime.Object) string {
	if st, ok := obj.(*metav1.Status); ok {
		return st.Message
	}
	return fmt.Sprintf("%T", obj)
}

// replace makes items at rev the cache's state and opens it for reads.
func (c *cache) replace(items []runtime.Object, rev uint64) error {
	state := btree.NewG(32, entryLess)
	for _, obj := range items {
		key, err := c.s.c.cfg.KeyFunc(c.root, obj)
		if err != nil {
			return err
		}
		state.ReplaceOrInsert(&entry{key: key, obj: obj, enc: newEncoded(obj, nil)})
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.state = state
	c.rev = rev
	c.windowStart = rev
	c.head, c.count = 0, 0
	clear(c.window)
	c.ready = true
	c.notifyLocked()
	return nil
}

// reset closes every watcher and marks the cache not ready.
func (c *cache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for w := range c.watchers {
		w.closeInputLocked(false)
	}
	clear(c.watchers)
	c.ready = false
	c.notifyLocked()
}

// bookmark records that the backend is at rev with no change in this
// cache's keys, and passes the news to the watchers that asked for it.
func (c *cache) bookmark(rev uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rev <= c.rev {
		return
	}
	c.rev = rev
	c.notifyLocked()
	c.bookmarkLocked(rev)
}

func (c *cache) bookmarkLocked(rev uint64) {
	var obj runtime.Object
	for w := range c.watchers {
		if !w.opts.ProgressNotify {
			continue
		}
		if obj == nil {
			obj = c.s.rc.NewFunc()
			if m, err := meta.Accessor(obj); err == nil {
				m.SetResourceVersion(strconv.FormatUint(rev, 10))
			}
		}
		// A bookmark only saves work on resume: drop it for a full buffer.
		select {
		case w.input <- storage.Event{Type: watch.Bookmark, Object: obj}:
		default:
		}
	}
}

// apply records one change and hands it to the watchers.
func (c *cache) apply(ev storage.Event) error {
	rev, err := objectRV(ev.Object)
	if err != nil {
		return err
	}
	key, err := c.s.c.cfg.KeyFunc(c.root, ev.Object)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := &event{key: key, rev: rev}
	if old, ok := c.state.Get(&entry{key: key}); ok {
		e.prev = old.obj
	}
	if ev.Type == watch.Deleted {
		c.state.Delete(&entry{key: key})
		if e.prev == nil {
			e.prev = ev.PrevObject
		}
		e.tombEnc = newEncoded(ev.Object, ev.Raw)
		if e.prev == nil {
			e.prev = ev.Object
		}
	} else {
		e.cur = ev.Object
		e.curEnc = newEncoded(ev.Object, ev.Raw)
		c.state.ReplaceOrInsert(&entry{key: key, obj: ev.Object, enc: e.curEnc})
	}
	// Append to the window, evicting the oldest event when it is full.
	n := len(c.window)
	if c.count == n {
		c.windowStart = c.window[c.head].rev
		c.window[c.head] = e
		c.head = (c.head + 1) % n
	} else {
		c.window[(c.head+c.count)%n] = e
		c.count++
	}
	if rev > c.rev {
		c.rev = rev
	}
	c.notifyLocked()
	for w := range c.watchers {
		out, ok, err := w.transform(e)
		if err != nil {
			w.failLocked(err)
			delete(c.watchers, w)
			continue
		}
		if !ok {
			continue
		}
		select {
		case w.input <- out:
		default:
			// The watcher's reader fell WatchBufferSize events behind.
			w.closeInputLocked(true)
			delete(c.watchers, w)
		}
	}
	return nil
}

// eventsAfterLocked returns the window's events after rev, or false when
// some of them have left the window.
func (c *cache) eventsAfterLocked(rev uint64) ([]*event, bool) {
	if rev < c.windowStart {
		return nil, false
	}
	n := len(c.window)
	var out []*event
	for i := range c.count {
		e := c.window[(c.head+i)%n]
		if e.rev > rev {
			out = append(out, e)
		}
	}
	return out, true
}

// noteWrite records that a write through the Cacher got revision rev.
func (c *cache) noteWrite(rev uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.written = max(c.written, rev)
}

// atLeast returns the revision a read asking for rv must wait for: rv, or
// the newest write through this Cacher when that is newer.
func (c *cache) atLeast(rv uint64) uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return max(rv, c.written)
}

// waitAtLeast waits until the cache is at least as new as rv and as the
// Cacher's own writes to it. A revision the backend has not reached yet
// answers errNotFresh at once: the backend then says it is too large.
func (c *cache) waitAtLeast(ctx context.Context, rv uint64) error {
	rv = c.atLeast(rv)
	c.mu.RLock()
	ok := c.ready && c.rev >= rv
	c.mu.RUnlock()
	if ok {
		return nil
	}
	if rv > 0 {
		if cur, err := c.s.c.backend.CurrentRevision(ctx); err == nil && rv > cur {
			return errNotFresh
		}
	}
	return c.waitFresh(ctx, rv, c.s.c.cfg.ConsistentReadTimeout)
}

// errNotFresh says the cache did not reach a revision in time.
var errNotFresh = errors.New("cache is behind")

// waitFresh waits until the cache holds a state at least as new as rev
// (any state for rev 0). It waits at most timeout, then answers errNotFresh.
func (c *cache) waitFresh(ctx context.Context, rev uint64, timeout time.Duration) error {
	var timer <-chan time.Time
	for {
		c.mu.RLock()
		ok := c.ready && c.rev >= rev
		changed := c.changed
		c.mu.RUnlock()
		if ok {
			return nil
		}
		if timer == nil {
			t := c.s.c.cfg.Clock.NewTimer(timeout)
			defer t.Stop()
			timer = t.C()
		}
		select {
		case <-changed:
		case <-timer:
			return errNotFresh
		case <-ctx.Done():
			return ctx.Err()
		case <-c.s.c.ctx.Done():
			return errClosed
		}
	}
}

// waitConsistent waits until the cache has every change the backend
// acknowledged before the call. When the cache's keys have been idle only
// a progress bookmark from the backend can show that, so it asks for one,
// and asks again with backoff: a bookmark from an etcd follower may lag
// the revision just read. It answers errNotFresh when the cache cannot
// show it caught up within ConsistentReadTimeout, or at once when the
// backend cannot send bookmarks on request.
func (c *cache) waitConsistent(ctx context.Context) error {
	rev, err := c.s.c.backend.CurrentRevision(ctx)
	if err != nil {
		return err
	}
	cfg := c.s.c.cfg
	pr, canAsk := c.s.c.backend.(progressRequester)
	var deadline <-chan time.Time
	interval := 10 * time.Millisecond
	for {
		c.mu.RLock()
		ready, fresh, changed := c.ready, c.rev >= rev, c.changed
		c.mu.RUnlock()
		if ready && fresh {
			return nil
		}
		if deadline == nil {
			t := cfg.Clock.NewTimer(cfg.ConsistentReadTimeout)
			defer t.Stop()
			deadline = t.C()
		}
		var retry <-chan time.Time
		if ready {
			if !canAsk {
				return errNotFresh
			}
			if err := pr.RequestWatchProgress(ctx); err != nil {
				return errNotFresh
			}
			t := cfg.Clock.NewTimer(interval)
			retry = t.C()
			interval = min(2*interval, 500*time.Millisecond)
			// Wait for the bookmark (or any change), or ask again.
		waitLoop:
			for {
				select {
				case <-changed:
					c.mu.RLock()
					fresh, changed = c.rev >= rev, c.changed
					c.mu.RUnlock()
					if fresh {
						t.Stop()
						return nil
					}
				case <-retry:
					break waitLoop
				case <-deadline:
					t.Stop()
					return errNotFresh
				case <-ctx.Done():
					t.Stop()
					return ctx.Err()
				case <-c.s.c.ctx.Done():
					t.Stop()
					return errClosed
				}
			}
			continue
		}
		// Not ready: the first list, which is newer than rev, is coming.
		select {
		case <-changed:
		case <-deadline:
			return errNotFresh
		case <-ctx.Done():
			return ctx.Err()
		case <-c.s.c.ctx.Done():
			return errClosed
		}
	}
}

// compactedTo raises the oldest revision watches may start from after
// the backend compacted revisions before rev.
func (c *cache) compactedTo(rev uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rev > 0 && rev-1 > c.windowStart {
		c.windowStart = rev - 1
	}
}

// progressBookmark sends every watcher that asked for progress a
// Bookmark at the cache's revision.
func (c *cache) progressBookmark() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bookmarkLocked(c.rev)
}

func objectRV(obj runtime.Object) (uint64, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return 0, err
	}
	rv, err := strconv.ParseUint(m.GetResourceVersion(), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cacher: event object has resourceVersion %q", m.GetResourceVersion())
	}
	return rv, nil
}
