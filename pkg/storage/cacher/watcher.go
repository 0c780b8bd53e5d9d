package cacher

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kplane/kplane/pkg/storage"
)

// watcher is one watch served by a cache. The cache's dispatch hands it
// events through input under the cache's lock; its goroutine owns result.
type watcher struct {
	cache *cache
	key   string
	// prefix is key+"/" for a recursive watch, "" otherwise.
	prefix string
	opts   storage.ListOptions

	// input is the watcher's buffer. The cache sends to it and closes it
	// (holding cache.mu) when the watcher must end; overflow and failure
	// say why and are set before the close.
	input       chan storage.Event
	inputClosed bool
	overflow    bool
	failure     error

	// What the goroutine sends before input: the initial state, the
	// bookmark that ends it, and the window's events to replay.
	initial         []*encoded
	initialRev      uint64
	initialBookmark bool
	replay          []*event

	result chan storage.Event
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// Watch implements storage.Interface. Watches are served by the resource's
// cache: from "" once the cache caught up with the backend, from "0" at the
// cache's state (once it holds this Cacher's own writes), from N by
// replaying the cache's window after N. A watch the cache cannot serve (N
// older than the window, or the cache not caught up in time) goes to the
// backend, which replays its history or answers Expired.
func (s *store) Watch(ctx context.Context, key string, opts storage.ListOptions) (storage.Watcher, error) {
	rv, err := storage.ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		if se, ok := err.(*storage.Error); ok {
			se.Key = key
		}
		return nil, err
	}
	if err := opts.Predicate.Validate(); err != nil {
		return nil, err
	}
	c, ok := s.cacheFor(key, opts.Recursive)
	if !ok {
		return s.inner.Watch(ctx, key, opts)
	}
	if opts.ResourceVersion == "" {
		err = c.waitConsistent(ctx)
	} else {
		err = c.waitAtLeast(ctx, rv)
	}
	if errors.Is(err, errNotFresh) {
		return s.inner.Watch(ctx, key, opts)
	}
	if err != nil {
		return nil, err
	}
	sendInitial := rv == 0
	if opts.SendInitialEvents != nil {
		sendInitial = *opts.SendInitialEvents
	}
	w := &watcher{
		cache:  c,
		key:    key,
		opts:   opts,
		input:  make(chan storage.Event, s.c.cfg.WatchBufferSize),
		result: make(chan storage.Event),
		done:   make(chan struct{}),
	}
	if opts.Recursive {
		w.prefix = strings.TrimSuffix(key, "/") + "/"
	}

	c.mu.Lock()
	if !c.ready {
		// The cache is relisting: let the backend serve this one.
		c.mu.Unlock()
		return s.inner.Watch(ctx, key, opts)
	}
	switch {
	case sendInitial:
		if err := w.snapshotLocked(); err != nil {
			c.mu.Unlock()
			return nil, err
		}
		w.initialRev = c.rev
		w.initialBookmark = opts.SendInitialEvents != nil
	case rv != 0:
		events, ok := c.eventsAfterLocked(rv)
		if !ok {
			// The window no longer (or not yet) reaches back to rv: the
			// backend replays its history, or answers Expired itself.
			c.mu.Unlock()
			return s.inner.Watch(ctx, key, opts)
		}
		w.replay = events
	}
	c.watchers[w] = struct{}{}
	c.mu.Unlock()

	ctx, w.cancel = context.WithCancel(ctx)
	stopOnClose := context.AfterFunc(s.c.ctx, w.cancel)
	if !s.c.spawn(func() {
		defer stopOnClose()
		w.run(ctx)
	}) {
		w.cancel()
		c.mu.Lock()
		delete(c.watchers, w)
		c.mu.Unlock()
		return nil, errClosed
	}
	return w, nil
}

// snapshotLocked collects the objects the watch starts with.
func (w *watcher) snapshotLocked() error {
	var err error
	visit := func(e *entry) bool {
		var ok bool
		if ok, err = w.opts.Predicate.Matches(e.obj); err != nil {
			return false
		}
		if ok {
			w.initial = append(w.initial, e.enc)
		}
		return true
	}
	if w.prefix != "" {
		w.cache.state.AscendRange(&entry{key: w.prefix}, &entry{key: storage.PrefixEnd(w.prefix)}, visit)
	} else if e, ok := w.cache.state.Get(&entry{key: w.key}); ok {
		visit(e)
	}
	return err
}

// ResultChan implements storage.Watcher.
func (w *watcher) ResultChan() <-chan storage.Event { return w.result }

// Stop implements storage.Watcher; it returns once ResultChan is closed.
func (w *watcher) Stop() {
	w.once.Do(w.cancel)
	<-w.done
}

// covers reports whether the watch sees key.
func (w *watcher) covers(key string) bool {
	if w.prefix != "" {
		return strings.HasPrefix(key, w.prefix)
	}
	return key == w.key
}

// transform turns a change into what this watcher sees of it: a change
// that makes an object stop matching is Deleted, one that makes it start
// matching Added. ok is false when the watcher sees nothing. The event's
// Raw is the object's encoding, made once for all watchers.
func (w *watcher) transform(e *event) (ev storage.Event, ok bool, err error) {
	if !w.covers(e.key) {
		return ev, false, nil
	}
	pred := w.opts.Predicate
	curOK, prevOK := false, false
	if e.cur != nil {
		if curOK, err = pred.Matches(e.cur); err != nil {
			return ev, false, err
		}
	}
	if e.prev != nil {
		if prevOK, err = pred.Matches(e.prev); err != nil {
			return ev, false, err
		}
	}
	codec := w.cache.s.rc.Codec
	switch {
	case curOK && prevOK:
		return storage.Event{Type: watch.Modified, Object: e.cur, Raw: e.curEnc.bytes(codec), PrevObject: e.prev}, true, nil
	case curOK:
		return storage.Event{Type: watch.Added, Object: e.cur, Raw: e.curEnc.bytes(codec)}, true, nil
	case prevOK:
		tomb := e.tombstone()
		return storage.Event{Type: watch.Deleted, Object: tomb.obj, Raw: tomb.bytes(codec), PrevObject: e.prev}, true, nil
	}
	return ev, false, nil
}

// closeInputLocked ends the watcher's input; overflow says its reader fell behind.
func (w *watcher) closeInputLocked(overflow bool) {
	if w.inputClosed {
		return
	}
	w.inputClosed = true
	w.overflow = overflow
	close(w.input)
}

// failLocked ends the watcher with an error.
func (w *watcher) failLocked(err error) {
	if !w.inputClosed {
		w.failure = err
	}
	w.closeInputLocked(false)
}

func (w *watcher) run(ctx context.Context) {
	defer close(w.done)
	defer close(w.result)
	defer func() {
		c := w.cache
		c.mu.Lock()
		delete(c.watchers, w)
		c.mu.Unlock()
	}()
	codec := w.cache.s.rc.Codec
	for _, enc := range w.initial {
		if !w.send(ctx, storage.Event{Type: watch.Added, Object: enc.obj, Raw: enc.bytes(codec)}) {
			return
		}
	}
	w.initial = nil
	if w.initialBookmark {
		obj := w.cache.s.rc.NewFunc()
		m, err := meta.Accessor(obj)
		if err != nil {
			w.send(ctx, errorEvent(err))
			return
		}
		m.SetResourceVersion(strconv.FormatUint(w.initialRev, 10))
		m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		if !w.send(ctx, storage.Event{Type: watch.Bookmark, Object: obj}) {
			return
		}
	}
	for _, e := range w.replay {
		ev, ok, err := w.transform(e)
		if err != nil {
			w.send(ctx, errorEvent(err))
			return
		}
		if ok && !w.send(ctx, ev) {
			return
		}
	}
	w.replay = nil
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.input:
			if ok {
				if !w.send(ctx, ev) {
					return
				}
				continue
			}
			w.cache.mu.RLock()
			overflow, failure := w.overflow, w.failure
			w.cache.mu.RUnlock()
			switch {
			case overflow:
				w.send(ctx, errorEvent(storage.NewError(storage.ErrCodeExpired, w.key, 0,
					fmt.Sprintf("watcher fell %d events behind; relist", cap(w.input)))))
			case failure != nil:
				w.send(ctx, errorEvent(failure))
			}
			return
		}
	}
}

func (w *watcher) send(ctx context.Context, ev storage.Event) bool {
	select {
	case w.result <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}

// errorEvent turns err into an Error event carrying a metav1.Status.
func errorEvent(err error) storage.Event {
	var status metav1.Status
	switch {
	case storage.IsExpired(err):
		status = apierrors.NewResourceExpired(err.Error()).ErrStatus
	default:
		status = apierrors.NewInternalError(err).ErrStatus
	}
	return storage.Event{Type: watch.Error, Object: &status}
}
