package etcd

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kplane/kplane/pkg/storage"
)

// initialEventsBatch is how many keys one read of a watch's initial state fetches.
const initialEventsBatch = 1000

// watcher is one open watch on etcd. Its goroutine owns result: it is the
// only sender and closes it on exit.
type watcher struct {
	s      *store
	key    string // the caller's key, for errors
	opts   storage.ListOptions
	result chan storage.Event
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// Watch implements storage.Interface. The watch runs in its own goroutine
// over one etcd watch; it ends on Stop, when ctx ends, when the Backend
// closes, or after an Error event.
//
// Slow readers: a watcher holds at most Config.WatchBufferSize events for
// its reader. When the buffer stays full for Config.SlowWatcherTimeout the
// watcher drops what it holds, sends an Expired Error event and closes, so
// that its reader relists instead of holding back etcd's client.
func (s *store) Watch(ctx context.Context, key string, opts storage.ListOptions) (storage.Watcher, error) {
	if err := s.closed(); err != nil {
		return nil, err
	}
	k, err := s.etcdPrefix(key, opts.Recursive)
	if err != nil {
		return nil, err
	}
	if err := opts.Predicate.Validate(); err != nil {
		return nil, err
	}
	rv, err := parseRV(key, opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	if rv > 0 {
		// etcd would wait for a future revision; like the memory backend
		// (and kube-apiserver, after its cache's wait), refuse it.
		cur, err := s.b.CurrentRevision(ctx)
		if err != nil {
			return nil, err
		}
		if rv > cur {
			return nil, storage.NewError(storage.ErrCodeTooLargeResourceVersion, key, rv,
				fmt.Sprintf("too large resource version: %d, current: %d", rv, cur))
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &watcher{
		s:      s,
		key:    key,
		opts:   opts,
		result: make(chan storage.Event, s.b.cfg.WatchBufferSize),
		cancel: cancel,
		done:   make(chan struct{}),
	}
	stopOnClose := context.AfterFunc(s.b.ctx, cancel)
	s.b.watchers.Add(1)
	go func() {
		defer s.b.watchers.Done()
		defer close(w.done)
		defer close(w.result)
		defer stopOnClose()
		w.run(ctx, k, rv)
	}()
	return w, nil
}

// ResultChan implements storage.Watcher.
func (w *watcher) ResultChan() <-chan storage.Event { return w.result }

// Stop implements storage.Watcher. It returns once ResultChan is closed.
func (w *watcher) Stop() {
	w.once.Do(w.cancel)
	<-w.done
}

func (w *watcher) run(ctx context.Context, k string, rv uint64) {
	sendInitial := rv == 0
	if w.opts.SendInitialEvents != nil {
		sendInitial = *w.opts.SendInitialEvents
	}
	start := int64(rv)
	switch {
	case sendInitial:
		rev, err := w.sendInitialEvents(ctx, k, start)
		if errors.Is(err, errWatcherEnded) {
			return
		}
		if err != nil {
			w.sendError(ctx, err)
			return
		}
		start = rev
		if w.opts.SendInitialEvents != nil {
			bookmark, err := w.bookmark(rev)
			if err != nil {
				w.sendError(ctx, err)
				return
			}
			m, _ := meta.Accessor(bookmark)
			m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
			if !w.send(ctx, storage.Event{Type: watch.Bookmark, Object: bookmark}) {
				return
			}
		}
	case rv == 0:
		resp, err := w.s.b.client.Get(ctx, k, clientv3.WithCountOnly())
		if err != nil {
			w.sendError(ctx, err)
			return
		}
		start = resp.Header.Revision
	}

	ops := []clientv3.OpOption{clientv3.WithRev(start + 1), clientv3.WithPrevKV()}
	if w.opts.Recursive {
		ops = append(ops, clientv3.WithPrefix())
	}
	if w.opts.ProgressNotify {
		ops = append(ops, clientv3.WithProgressNotify())
	}
	wch := w.s.b.client.Watch(clientv3.WithRequireLeader(ctx), k, ops...)
	for {
		var resp clientv3.WatchResponse
		var ok bool
		select {
		case <-ctx.Done():
			return
		case resp, ok = <-wch:
		}
		if !ok {
			if ctx.Err() == nil {
				w.sendError(ctx, errors.New("etcd closed the watch"))
			}
			return
		}
		if err := resp.Err(); err != nil {
			if resp.CompactRevision != 0 || errors.Is(err, rpctypes.ErrCompacted) {
				err = storage.NewError(storage.ErrCodeExpired, w.key, uint64(start),
					fmt.Sprintf("too old resource version: %d (%d)", start, resp.CompactRevision))
			}
			w.sendError(ctx, err)
			return
		}
		if resp.IsProgressNotify() {
			if !w.opts.ProgressNotify {
				continue
			}
			bookmark, err := w.bookmark(resp.Header.Revision)
			if err != nil {
				w.sendError(ctx, err)
				return
			}
			if !w.send(ctx, storage.Event{Type: watch.Bookmark, Object: bookmark}) {
				return
			}
			continue
		}
		for _, e := range resp.Events {
			ev, ok, err := w.transform(e)
			if err != nil {
				w.sendError(ctx, err)
				return
			}
			if ok && !w.send(ctx, ev) {
				return
			}
		}
	}
}

// errWatcherEnded is returned by what sends events once the watcher has
// ended: stopped, or closed as too slow (its reader has the Expired error).
var errWatcherEnded = errors.New("watcher ended")

// sendInitialEvents sends the objects at k (or below it) as Added events,
// read at rev, or at the newest revision when rev is 0. It returns the
// revision read at.
func (w *watcher) sendInitialEvents(ctx context.Context, k string, rev int64) (int64, error) {
	start, end := k, ""
	if w.opts.Recursive {
		end = clientv3.GetPrefixRangeEnd(k)
	}
	for {
		ops := []clientv3.OpOption{clientv3.WithLimit(initialEventsBatch)}
		if end != "" {
			ops = append(ops, clientv3.WithRange(end))
		}
		if rev != 0 {
			ops = append(ops, clientv3.WithRev(rev))
		}
		resp, err := w.s.b.client.Get(ctx, start, ops...)
		if err != nil {
			return 0, listError(w.key, err, rev, false)
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			obj := w.s.newFunc()
			if err := w.s.decode(string(kv.Key), kv.Value, kv.ModRevision, obj); err != nil {
				return 0, err
			}
			ok, err := w.opts.Predicate.Matches(obj)
			if err != nil {
				return 0, err
			}
			if ok && !w.send(ctx, storage.Event{Type: watch.Added, Object: obj}) {
				return 0, errWatcherEnded
			}
		}
		if !resp.More || end == "" || len(resp.Kvs) == 0 {
			return rev, nil
		}
		start = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// transform turns an etcd event into the event the watcher's predicate
// sees: a change that makes an object stop matching is a Deleted event, one
// that makes it start matching an Added event. ok is false when the
// watcher does not see the change at all.
func (w *watcher) transform(e *clientv3.Event) (ev storage.Event, ok bool, err error) {
	rev := e.Kv.ModRevision
	key := string(e.Kv.Key)
	var cur, prev runtime.Object
	if e.Type != mvccpb.DELETE {
		cur = w.s.newFunc()
		if err := w.s.decode(key, e.Kv.Value, rev, cur); err != nil {
			return ev, false, err
		}
	}
	if e.IsModify() && w.opts.NoPrevObject && w.opts.Predicate.Empty() {
		// Every state matches, so this is a modification of an object
		// the consumer has; it keeps the previous state itself.
		return storage.Event{Type: watch.Modified, Object: cur}, true, nil
	}
	if e.PrevKv != nil {
		prev = w.s.newFunc()
		if err := w.s.decode(key, e.PrevKv.Value, e.PrevKv.ModRevision, prev); err != nil {
			return ev, false, err
		}
	} else if e.Type == mvccpb.DELETE {
		return ev, false, fmt.Errorf("etcd storage: delete of %s at revision %d came without its previous value", key, rev)
	}
	pred := w.opts.Predicate
	curOK := false
	if cur != nil {
		if curOK, err = pred.Matches(cur); err != nil {
			return ev, false, err
		}
	}
	prevOK := false
	if prev != nil && !e.IsCreate() {
		if prevOK, err = pred.Matches(prev); err != nil {
			return ev, false, err
		}
	}
	switch {
	case curOK && prevOK:
		return storage.Event{Type: watch.Modified, Object: cur, PrevObject: prev}, true, nil
	case curOK:
		return storage.Event{Type: watch.Added, Object: cur}, true, nil
	case prevOK:
		// The last state the watcher saw, stamped with the revision at
		// which it left the watcher's view.
		last := prev.DeepCopyObject()
		if err := setRV(last, rev); err != nil {
			return ev, false, err
		}
		return storage.Event{Type: watch.Deleted, Object: last, PrevObject: prev}, true, nil
	}
	return ev, false, nil
}

// bookmark returns an empty object carrying revision rev.
func (w *watcher) bookmark(rev int64) (runtime.Object, error) {
	obj := w.s.newFunc()
	if err := setRV(obj, rev); err != nil {
		return nil, err
	}
	return obj, nil
}

// send delivers ev, waiting at most SlowWatcherTimeout for room. It
// reports false when the watcher must end.
func (w *watcher) send(ctx context.Context, ev storage.Event) bool {
	select {
	case w.result <- ev:
		return true
	default:
	}
	timer := w.s.b.cfg.Clock.NewTimer(w.s.b.cfg.SlowWatcherTimeout)
	defer timer.Stop()
	select {
	case w.result <- ev:
		return true
	case <-ctx.Done():
		return false
	case <-timer.C():
	}
	// The reader stopped reading. Make room and tell it to relist; this
	// goroutine is the only sender, so the error event always fits.
	select {
	case <-w.result:
	default:
	}
	w.result <- errorEvent(storage.NewError(storage.ErrCodeExpired, w.key, 0,
		fmt.Sprintf("watcher could not keep up with %d buffered events; relist", cap(w.result))))
	w.s.b.logger.Warn("closing slow etcd watcher", "key", w.key)
	return false
}

// sendError sends err as an Error event unless the watcher was stopped.
func (w *watcher) sendError(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	w.send(ctx, errorEvent(err))
}

// errorEvent turns err into an Error event carrying a metav1.Status.
func errorEvent(err error) storage.Event {
	var status *metav1.Status
	var se *storage.Error
	switch {
	case errors.As(err, &se) && se.Code == storage.ErrCodeExpired:
		s := apierrors.NewResourceExpired(se.Error()).ErrStatus
		status = &s
	case errors.As(err, &se) && se.Code == storage.ErrCodeTooLargeResourceVersion:
		s := apierrors.NewTimeoutError(se.Error(), 1).ErrStatus
		status = &s
	default:
		s := apierrors.NewInternalError(err).ErrStatus
		status = &s
	}
	return storage.Event{Type: watch.Error, Object: status}
}
