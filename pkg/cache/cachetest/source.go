package cachetest

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kplane/kplane/pkg/cache"
)

// Config configures a Source.
type Config struct {
	// Resource names the resource in errors.
	Resource schema.GroupResource
	// RefuseWatchList makes Watch reject sendInitialEvents, like a server
	// without the feature.
	RefuseWatchList bool
	// WatchBuffer is how many events a watch may hold for a client that
	// is not reading before the source gives up on it and closes it.
	// Default 1 << 20.
	WatchBuffer int
}

// watchChanBuffer is the size of a watch's result channel: a real server
// writes ahead into the connection's socket buffers, so a client that is not
// scheduled at once still finds events waiting.
const watchChanBuffer = 64

type event[T cache.Object] struct {
	rv  int64
	typ watch.EventType
	obj T
}

// Source is an in-memory fake API for objects of type T. Create and Update
// store a deep copy of what they are given; the objects it hands out (from
// List, Watch, Get, Objects and the returns of Create, Update and Delete)
// are shared with every client, like an informer cache: do not mutate them.
type Source[T cache.Object] struct {
	cfg Config

	mu sync.Mutex
	// rv is the latest resourceVersion.
	rv int64
	// objects is the current state by key.
	objects map[string]T
	// history holds every change with rv > compacted, oldest first.
	history []event[T]
	// compacted is the oldest resourceVersion a watch may start from.
	compacted int64
	// snapshots are the list snapshots that continue tokens refer to.
	snapshots map[int64][]T
	watchers  map[*fakeWatch[T]]struct{}

	// Counters for tests.
	lists, watches, watchLists int

	// hold, when set, is a channel that watches wait on before delivering
	// anything (Hold); Release closes it.
	hold atomic.Pointer[chan struct{}]
}

// Hold makes every watch queue its events without delivering them until
// Release, so that a burst can be prepared and then delivered at full
// speed (benchmarks).
func (s *Source[T]) Hold() {
	ch := make(chan struct{})
	s.hold.CompareAndSwap(nil, &ch)
}

// Release delivers what Hold held back, and everything after.
func (s *Source[T]) Release() {
	if ch := s.hold.Swap(nil); ch != nil {
		close(*ch)
	}
}

// New returns an empty Source at resourceVersion 1.
func New[T cache.Object](cfg Config) *Source[T] {
	if cfg.WatchBuffer <= 0 {
		cfg.WatchBuffer = 1 << 20
	}
	return &Source[T]{cfg: cfg, rv: 1, compacted: 1, objects: map[string]T{},
		snapshots: map[int64][]T{}, watchers: map[*fakeWatch[T]]struct{}{}}
}

var _ cache.ListerWatcher[cache.Object] = (*Source[cache.Object])(nil)

// ResourceVersion returns the latest resourceVersion.
func (s *Source[T]) ResourceVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strconv.FormatInt(s.rv, 10)
}

// Counts returns how many List calls, plain watches and watch-lists the
// source has served.
func (s *Source[T]) Counts() (lists, watches, watchLists int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lists, s.watches, s.watchLists
}

// Objects returns the current objects by key.
func (s *Source[T]) Objects() map[string]T {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]T, len(s.objects))
	for k, v := range s.objects {
		out[k] = v
	}
	return out
}

// Get returns the current object under key.
func (s *Source[T]) Get(key string) (T, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	obj, ok := s.objects[key]
	return obj, ok
}

// Create stores obj, setting its resourceVersion, and returns it. It fails
// if the key exists.
func (s *Source[T]) Create(obj T) (T, error) {
	key, err := cache.ObjectKey(obj)
	if err != nil {
		return obj, err
	}
	obj = obj.DeepCopyObject().(T)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.objects[key]; ok {
		return obj, apierrors.NewAlreadyExists(s.cfg.Resource, key)
	}
	s.commitLocked(watch.Added, key, obj)
	return obj, nil
}

// Update replaces the object with obj's key, setting its resourceVersion.
// It fails if the key does not exist.
func (s *Source[T]) Update(obj T) (T, error) {
	key, err := cache.ObjectKey(obj)
	if err != nil {
		return obj, err
	}
	obj = obj.DeepCopyObject().(T)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.objects[key]; !ok {
		return obj, apierrors.NewNotFound(s.cfg.Resource, key)
	}
	s.commitLocked(watch.Modified, key, obj)
	return obj, nil
}

// Delete removes the object under key and returns its final state, whose
// resourceVersion is that of the deletion (as a real server does).
func (s *Source[T]) Delete(key string) (T, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.objects[key]
	if !ok {
		return old, apierrors.NewNotFound(s.cfg.Resource, key)
	}
	final := old.DeepCopyObject().(T)
	s.commitLocked(watch.Deleted, key, final)
	return final, nil
}

func (s *Source[T]) commitLocked(typ watch.EventType, key string, obj T) {
	s.rv++
	obj.SetResourceVersion(strconv.FormatInt(s.rv, 10))
	if typ == watch.Deleted {
		delete(s.objects, key)
	} else {
		s.objects[key] = obj
	}
	ev := event[T]{rv: s.rv, typ: typ, obj: obj}
	s.history = append(s.history, ev)
	for w := range s.watchers {
		if w.matches(obj) {
			w.sendLocked(cache.Event[T]{Type: typ, Object: obj})
		}
	}
}

// Compact forgets the history up to the latest resourceVersion: watches and
// list continuations from older resourceVersions get 410 Gone. Open watches
// are not affected.
func (s *Source[T]) Compact() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.compactLocked()
}

func (s *Source[T]) compactLocked() {
	s.compacted = s.rv
	s.history = nil
	clear(s.snapshots)
}

// ExpireWatches compacts the history and ends every open watch with an Error
// event (410, reason Expired), as a server does when a watcher falls behind
// the compaction.
func (s *Source[T]) ExpireWatches() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.compactLocked()
	for w := range s.watchers {
		w.sendLocked(cache.Event[T]{Type: watch.Error, Status: expiredStatus("watch expired")})
		w.closeLocked()
	}
}

// DropWatches closes every open watch's result channel, like a broken
// connection or a server timeout.
func (s *Source[T]) DropWatches() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.watchers {
		w.closeLocked()
	}
}

// Bookmark sends a bookmark at the latest resourceVersion to every watch
// that allowed bookmarks.
func (s *Source[T]) Bookmark() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.watchers {
		if w.bookmarks {
			w.sendLocked(cache.Event[T]{Type: watch.Bookmark, Object: s.bookmarkLocked(nil)})
		}
	}
}

// OpenWatches returns the number of open watches.
func (s *Source[T]) OpenWatches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.watchers)
}

func (s *Source[T]) bookmarkLocked(annotations map[string]string) T {
	var zero T
	obj := reflect.New(reflect.TypeOf(zero).Elem()).Interface().(T)
	obj.SetResourceVersion(strconv.FormatInt(s.rv, 10))
	if annotations != nil {
		obj.SetAnnotations(annotations)
	}
	return obj
}

func expiredStatus(msg string) *metav1.Status {
	return &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone,
		Reason: metav1.StatusReasonExpired, Message: msg}
}

func expiredError(msg string) error {
	return &apierrors.StatusError{ErrStatus: *expiredStatus(msg)}
}

func parseRV(rv string) (int64, error) {
	if rv == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || n < 0 {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resourceVersion %q", rv))
	}
	return n, nil
}

func selectorOf(opts metav1.ListOptions) (labels.Selector, error) {
	if opts.LabelSelector == "" {
		return labels.Everything(), nil
	}
	sel, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return sel, nil
}

// List returns one page of the latest state, ordered by key. A continue
// token refers to the snapshot of the first page; it answers 410 Expired
// once compacted. Label selectors are honoured.
func (s *Source[T]) List(ctx context.Context, opts metav1.ListOptions) (*cache.List[T], error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sel, err := selectorOf(opts)
	if err != nil {
		return nil, err
	}
	if opts.Limit < 0 {
		return nil, apierrors.NewBadRequest("negative limit")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists++
	var snapRV int64
	var items []T
	offset := 0
	if opts.Continue != "" {
		rvStr, offStr, ok := strings.Cut(opts.Continue, "/")
		rv, err1 := strconv.ParseInt(rvStr, 10, 64)
		off, err2 := strconv.Atoi(offStr)
		if !ok || err1 != nil || err2 != nil || off < 0 {
			return nil, apierrors.NewBadRequest("invalid continue token")
		}
		snap, ok := s.snapshots[rv]
		if !ok || rv < s.compacted {
			return nil, expiredError("the continue token is too old")
		}
		snapRV, items, offset = rv, snap, off
	} else {
		rv, err := parseRV(opts.ResourceVersion)
		if err != nil {
			return nil, err
		}
		if rv > s.rv {
			return nil, apierrors.NewTimeoutError("too large resource version", 1)
		}
		snapRV = s.rv
		keys := make([]string, 0, len(s.objects))
		for k := range s.objects {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if obj := s.objects[k]; sel.Matches(labels.Set(obj.GetLabels())) {
				items = append(items, obj)
			}
		}
	}
	if offset > len(items) {
		return nil, apierrors.NewBadRequest("invalid continue token")
	}
	out := &cache.List[T]{}
	out.ResourceVersion = strconv.FormatInt(snapRV, 10)
	end := len(items)
	if opts.Limit > 0 && int64(end-offset) > opts.Limit {
		end = offset + int(opts.Limit)
		s.snapshots[snapRV] = items
		out.Continue = fmt.Sprintf("%d/%d", snapRV, end)
		rem := int64(len(items) - end)
		out.RemainingItemCount = &rem
	}
	out.Items = slices.Clone(items[offset:end])
	return out, nil
}

// Watch opens a watch. With sendInitialEvents=true (unless RefuseWatchList)
// it first sends an Added event per current object and then, if bookmarks
// are allowed, a bookmark annotated "k8s.io/initial-events-end". Otherwise
// resourceVersion "" or "0" also starts with the current state, and any
// other resourceVersion replays the changes after it, or fails with a 410
// Expired *apierrors.StatusError when it is older than the compaction.
func (s *Source[T]) Watch(ctx context.Context, opts metav1.ListOptions) (cache.Watch[T], error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sel, err := selectorOf(opts)
	if err != nil {
		return nil, err
	}
	rv, err := parseRV(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	watchList := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	if watchList && s.cfg.RefuseWatchList {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: s.cfg.Resource.Group, Kind: "ListOptions"}, "",
			nil)
	}
	if watchList && opts.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan {
		return nil, apierrors.NewBadRequest("sendInitialEvents requires resourceVersionMatch=NotOlderThan")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if rv > s.rv {
		return nil, apierrors.NewTimeoutError("too large resource version", 1)
	}
	w := &fakeWatch[T]{source: s, sel: sel, bookmarks: opts.AllowWatchBookmarks, limit: s.cfg.WatchBuffer,
		ch: make(chan cache.Event[T], watchChanBuffer), stopCh: make(chan struct{}), done: make(chan struct{})}
	w.cond.L = &w.mu
	sendCurrent := watchList || rv == 0
	if watchList {
		s.watchLists++
	} else {
		s.watches++
	}
	if sendCurrent {
		keys := make([]string, 0, len(s.objects))
		for k := range s.objects {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if obj := s.objects[k]; w.matches(obj) {
				w.sendLocked(cache.Event[T]{Type: watch.Added, Object: obj})
			}
		}
		if watchList && w.bookmarks {
			w.sendLocked(cache.Event[T]{Type: watch.Bookmark,
				Object: s.bookmarkLocked(map[string]string{metav1.InitialEventsAnnotationKey: "true"})})
		}
	} else {
		if rv < s.compacted {
			return nil, expiredError(fmt.Sprintf("too old resource version: %d (%d)", rv, s.compacted))
		}
		i, _ := slices.BinarySearchFunc(s.history, rv+1, func(e event[T], rv int64) int {
			return int(e.rv - rv)
		})
		for _, e := range s.history[i:] {
			if w.matches(e.obj) {
				w.sendLocked(cache.Event[T]{Type: e.typ, Object: e.obj})
			}
		}
	}
	s.watchers[w] = struct{}{}
	go w.pump()
	stopOnCtx := context.AfterFunc(ctx, w.Stop)
	w.mu.Lock()
	w.afterStop = stopOnCtx
	w.mu.Unlock()
	return w, nil
}

// fakeWatch is one open watch: an unbounded queue pumped into ch by one
// goroutine, which exits when the watch is stopped or closed.
type fakeWatch[T cache.Object] struct {
	source    *Source[T]
	sel       labels.Selector
	bookmarks bool
	limit     int

	mu      sync.Mutex
	cond    sync.Cond
	queue   []cache.Event[T]
	closing bool // no more events; pump closes ch once queue is drained

	ch        chan cache.Event[T]
	stopCh    chan struct{} // closed by Stop
	stopOnce  sync.Once
	done      chan struct{} // closed when pump exits
	afterStop func() bool
}

func (w *fakeWatch[T]) matches(obj T) bool {
	return w.sel.Matches(labels.Set(obj.GetLabels()))
}

// sendLocked queues ev; s.mu is held.
func (w *fakeWatch[T]) sendLocked(ev cache.Event[T]) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closing {
		return
	}
	if len(w.queue) >= w.limit {
		// The client is not reading: give up on it, as a server would.
		w.closing = true
		delete(w.source.watchers, w)
		w.cond.Signal()
		return
	}
	w.queue = append(w.queue, ev)
	w.cond.Signal()
}

// closeLocked ends the watch after what is queued; s.mu is held.
func (w *fakeWatch[T]) closeLocked() {
	delete(w.source.watchers, w)
	w.mu.Lock()
	w.closing = true
	w.mu.Unlock()
	w.cond.Signal()
}

func (w *fakeWatch[T]) pump() {
	defer close(w.done)
	defer close(w.ch)
	for {
		w.mu.Lock()
		for len(w.queue) == 0 && !w.closing {
			w.cond.Wait()
		}
		if len(w.queue) == 0 {
			w.mu.Unlock()
			return
		}
		ev := w.queue[0]
		w.queue[0] = cache.Event[T]{}
		w.queue = w.queue[1:]
		if len(w.queue) == 0 {
			w.queue = nil // free the array of a burst
		}
		w.mu.Unlock()
		if hold := w.source.hold.Load(); hold != nil {
			select {
			case <-*hold:
			case <-w.stopCh:
				return
			}
		}
		select {
		case w.ch <- ev:
		case <-w.stopCh:
			return
		}
	}
}

// ResultChan returns the events; it is closed when the watch ends.
func (w *fakeWatch[T]) ResultChan() <-chan cache.Event[T] { return w.ch }

// Stop ends the watch and waits for its goroutine to exit.
func (w *fakeWatch[T]) Stop() {
	w.stopOnce.Do(func() {
		w.source.mu.Lock()
		delete(w.source.watchers, w)
		w.source.mu.Unlock()
		w.mu.Lock()
		w.closing = true
		w.queue = nil
		afterStop := w.afterStop
		w.mu.Unlock()
		w.cond.Signal()
		close(w.stopCh)
		if afterStop != nil {
			afterStop()
		}
	})
	<-w.done
}
