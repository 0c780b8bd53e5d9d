package memory

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/pkg/storage"
)

// Watch implements storage.Interface.
//
// With ResourceVersion "" or "0" and SendInitialEvents nil, the watch first
// sends the current state as Added events. With SendInitialEvents true it
// sends the current state (which is at least as new as any resourceVersion
// given) as Added events and then a Bookmark annotated
// metav1.InitialEventsAnnotationKey. Otherwise it sends the changes after
// ResourceVersion, failing with ErrCodeExpired when that revision is
// compacted and ErrCodeTooLargeResourceVersion when it is not written yet.
// The state and the changes that follow it are read atomically: nothing is
// missed or sent twice between them.
//
// The watch ends when ctx is done, when Stop is called, when the Backend
// closes, or, for a watcher that fell behind the history, after a
// watch.Error event carrying a 410 Expired status.
func (s *store) Watch(ctx context.Context, key string, opts storage.ListOptions) (storage.Watcher, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if opts.Recursive {
		if err := storage.ValidatePrefix(key); err != nil {
			return nil, err
		}
	} else if err := storage.ValidateKey(key); err != nil {
		return nil, err
	}
	pred := opts.Predicate
	if err := pred.Validate(); err != nil {
		return nil, err
	}
	rv, err := parseRV(key, opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	initial := rv == 0
	if opts.SendInitialEvents != nil {
		initial = *opts.SendInitialEvents
	}
	w := &watcher{
		s:               s,
		key:             storage.KeyPrefix(key, opts.Recursive),
		recursive:       opts.Recursive,
		pred:            pred,
		progressNotify:  opts.ProgressNotify,
		initialBookmark: opts.SendInitialEvents != nil && *opts.SendInitialEvents,
		result:          make(chan storage.Event, s.b.bufferSize),
		stop:            make(chan struct{}),
		done:            make(chan struct{}),
	}

	b := s.b
	b.mu.Lock() // feedLocked may add a feed
	if b.closed {
		b.mu.Unlock()
		return nil, ErrClosed
	}
	cur := b.rev
	switch {
	case rv > cur:
		b.mu.Unlock()
		return nil, tooLarge(key, rv, cur)
	case initial || rv == 0:
		w.next = cur + 1
	case rv < b.minRev:
		minRev := b.minRev
		b.mu.Unlock()
		return nil, storage.NewError(storage.ErrCodeExpired, key, rv,
			fmt.Sprintf("too old resource version: %d (%d)", rv, minRev))
	default:
		w.next = rv + 1
	}
	if initial {
		if opts.Recursive {
			w.initial = b.rangeLocked(w.key, storage.PrefixEnd(w.key), cur, 0, nil)
		} else if c := b.currentKVLocked(key); c.value != nil {
			w.initial = []kv{c}
		}
	}
	w.feed = b.feedLocked(w.key)
	w.progressGen = b.progressGen
	b.watchers.Add(1)
	b.mu.Unlock()

	if w.progressNotify {
		w.ticker = b.clock.NewTicker(b.progressInterval)
	}
	go w.run(ctx)
	return w, nil
}

// watcher is one open watch. Its goroutine owns every field but stop,
// stopOnce and done.
type watcher struct {
	s               *store
	key             string // the key, or the prefix when recursive
	recursive       bool
	pred            storage.Predicate
	progressNotify  bool
	initialBookmark bool
	initial         []kv  // the state to send as Added first
	feed            *feed // the log of the watched keys' changes
	ticker          clock.Ticker

	// next is the revision of the next change to send; every change before
	// it has been sent or filtered out.
	next        uint64
	progressGen uint64

	result   chan storage.Event
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{} // closed when the goroutine has exited
}

var _ storage.Watcher = (*watcher)(nil)

// ResultChan returns the channel of events. It is closed when the watch ends.
func (w *watcher) ResultChan() <-chan storage.Event { return w.result }

// Stop ends the watch and waits for its goroutine to exit. It is idempotent.
func (w *watcher) Stop() {
	w.stopOnce.Do(func() { close(w.stop) })
	<-w.done
}

func (w *watcher) run(ctx context.Context) {
	defer w.s.b.watchers.Done()
	defer close(w.done)
	defer close(w.result)
	var tick <-chan time.Time
	if w.ticker != nil {
		defer w.ticker.Stop()
		tick = w.ticker.C()
	}
	for _, c := range w.initial {
		obj, shared, err := w.s.read(c, true)
		if err != nil {
			w.sendError(ctx, apierrors.NewInternalError(err))
			return
		}
		ok, err := w.pred.Matches(obj)
		if err != nil {
			w.sendError(ctx, apierrors.NewInternalError(err))
			return
		}
		if ok && shared {
			// The cache is not handed out, even read only: a consumer that
			// broke the rule would corrupt later reads.
			obj = obj.DeepCopyObject()
		}
		if ok && !w.send(ctx, storage.Event{Type: watch.Added, Object: obj, Raw: c.value}) {
			return
		}
	}
	w.initial = nil
	if w.initialBookmark && !w.sendBookmark(ctx, w.next-1, true) {
		return
	}
	pendingBookmark := false
	for {
		evs, cur, wake, gen, closed, ok := w.s.b.eventsFrom(w.feed, w.next)
		if closed {
			return
		}
		if !ok {
			w.s.b.logger.Info("closing a watcher that fell behind the storage history",
				"key", w.key, "nextRevision", w.next)
			w.sendError(ctx, apierrors.NewResourceExpired(fmt.Sprintf(
				"watcher fell behind: resource version %d has been compacted; relist and watch again", w.next-1)))
			return
		}
		for _, ev := range evs {
			if w.matchesKey(ev.key) {
				e, ok, err := w.convert(ev)
				if err != nil {
					w.sendError(ctx, apierrors.NewInternalError(err))
					return
				}
				if ok && !w.send(ctx, e) {
					return
				}
			}
			w.next = ev.rev + 1
		}
		// Every change of the watched keys up to cur has been sent.
		w.next = max(w.next, cur+1)
		if gen != w.progressGen {
			w.progressGen = gen
			pendingBookmark = pendingBookmark || w.progressNotify
		}
		if pendingBookmark {
			if !w.sendBookmark(ctx, w.next-1, false) {
				return
			}
			pendingBookmark = false
		}
		select {
		case <-wake:
		case <-tick:
			pendingBookmark = true
		case <-w.stop:
			return
		case <-ctx.Done():
			return
		case <-w.s.b.done:
			return
		}
	}
}

func (w *watcher) matchesKey(key string) bool {
	if w.recursive {
		return strings.HasPrefix(key, w.key)
	}
	return key == w.key
}

// send delivers e, reporting false when the watch ended first.
func (w *watcher) send(ctx context.Context, e storage.Event) bool {
	select {
	case w.result <- e:
		return true
	case <-w.stop:
	case <-ctx.Done():
	case <-w.s.b.done:
	}
	return false
}

func (w *watcher) sendError(ctx context.Context, err *apierrors.StatusError) {
	status := err.ErrStatus
	w.send(ctx, storage.Event{Type: watch.Error, Object: &status})
}

// sendBookmark sends a Bookmark at rev: an empty object of the resource
// carrying only the resourceVersion (and the end-of-initial-events
// annotation when initialEnd).
func (w *watcher) sendBookmark(ctx context.Context, rev uint64, initialEnd bool) bool {
	obj := w.s.newFunc()
	m, err := meta.Accessor(obj)
	if err != nil {
		w.sendError(ctx, apierrors.NewInternalError(err))
		return false
	}
	m.SetResourceVersion(storage.FormatResourceVersion(rev))
	if initialEnd {
		m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	}
	return w.send(ctx, storage.Event{Type: watch.Bookmark, Object: obj})
}

// convert turns a logged change into the event this watcher sends, as
// kube-apiserver does for filtered watches: an object that starts to match
// is Added, one that stops matching is Deleted (its previous state stamped
// with the change's revision), one that matches before and after is
// Modified. ok is false when the watcher sends nothing for the change.
func (w *watcher) convert(ev *event) (e storage.Event, ok bool, err error) {
	d := ev.decode(w.s)
	if d.err != nil {
		return e, false, d.err
	}
	curOK, prevOK := ev.value != nil, ev.prev != nil
	if !w.pred.Empty() {
		if curOK {
			if curOK, err = w.pred.Matches(d.obj); err != nil {
				return e, false, err
			}
		}
		if prevOK {
			if prevOK, err = w.pred.Matches(d.prev); err != nil {
				return e, false, err
			}
		}
	}
	switch {
	case curOK && !prevOK:
		return storage.Event{Type: watch.Added, Object: d.obj, Raw: ev.value}, true, nil
	case curOK && prevOK:
		return storage.Event{Type: watch.Modified, Object: d.obj, Raw: ev.value, PrevObject: d.prev}, true, nil
	case prevOK:
		tomb, raw, err := ev.tombstone(w.s, d)
		if err != nil {
			return e, false, err
		}
		return storage.Event{Type: watch.Deleted, Object: tomb, Raw: raw, PrevObject: d.prev}, true, nil
	}
	return e, false, nil
}

// decode returns the event decoded by s, decoding it once for all of s's
// watchers (and afresh for the rare second store watching the same key).
func (ev *event) decode(s *store) *decoded {
	if d := ev.dec.Load(); d != nil && d.owner == s {
		return d
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if d := ev.dec.Load(); d != nil && d.owner == s {
		return d
	}
	d := &decoded{owner: s}
	if ev.value != nil {
		d.obj = s.newFunc()
		if err := s.decode(ev.key, ev.value, d.obj); err != nil {
			d.err = err
		}
	}
	if ev.prev != nil && d.err == nil {
		d.prev = s.newFunc()
		if err := s.decode(ev.key, ev.prev, d.prev); err != nil {
			d.err = err
		}
	}
	if ev.dec.Load() == nil && ev.rev+decodedWindow > s.b.revNow.Load() {
		ev.dec.Store(d)
	}
	return d
}

// setDecoded makes d the event's decoded form unless a watcher decoded it
// already. d's objects are read only from here on.
func (ev *event) setDecoded(d *decoded) {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if ev.dec.Load() == nil && ev.rev+decodedWindow > d.owner.b.revNow.Load() {
		ev.dec.Store(d)
	}
}

// tombstone returns d's previous object stamped with the event's revision,
// encoded, made once per decoded event.
func (ev *event) tombstone(s *store, d *decoded) (runtime.Object, []byte, error) {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if !d.tombSet {
		d.tombSet = true
		tomb := d.prev.DeepCopyObject()
		d.tombRaw, d.tombErr = s.encodeAt(ev.key, tomb, ev.rev)
		d.tomb = tomb
	}
	return d.tomb, d.tombRaw, d.tombErr
}
