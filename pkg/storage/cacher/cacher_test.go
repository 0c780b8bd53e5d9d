package cacher

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kplane/kplane/pkg/storage"
	"github.com/kplane/kplane/pkg/storage/etcd"
)

var (
	etcdOnce  sync.Once
	etcdSrv   *etcd.Embedded
	etcdErr   error
	etcdDir   string
	prefixSeq atomic.Int64
)

func TestMain(m *testing.M) {
	code := m.Run()
	if etcdSrv != nil {
		if err := etcdSrv.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "close embedded etcd:", err)
			code = 1
		}
		os.RemoveAll(etcdDir)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// newEtcdBackend returns an etcd backend under a fresh prefix of the
// package's shared embedded etcd.
func newEtcdBackend(t testing.TB) *etcd.Backend {
	t.Helper()
	etcdOnce.Do(func() {
		if etcdDir, etcdErr = os.MkdirTemp("", "kplane-cacher-test-"); etcdErr != nil {
			return
		}
		// etcd's own periodic progress notifications are pushed far out,
		// so that bookmarks in these tests come from the cache's requests.
		etcdSrv, etcdErr = etcd.StartEmbedded(context.Background(), etcd.EmbeddedConfig{
			DataDir: etcdDir, UnsafeNoFsync: true, ProgressNotifyInterval: 10 * time.Minute,
		})
	})
	if etcdErr != nil {
		t.Fatalf("embedded etcd: %v", etcdErr)
	}
	b, err := etcd.New(etcd.Config{Client: etcdSrv.Client(), Prefix: fmt.Sprintf("/cacher-test-%d", prefixSeq.Add(1))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// newCacher returns a Cacher in front of b, closed at cleanup.
func newCacher(t testing.TB, b storage.Backend, cfg Config) *Cacher {
	t.Helper()
	cfg.Backend = b
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

var podConfig = storage.ResourceConfig{
	Codec:       storage.JSONCodec{},
	NewFunc:     func() kruntime.Object { return &corev1.Pod{} },
	NewListFunc: func() kruntime.Object { return &corev1.PodList{} },
}

func podStore(t testing.TB, b storage.Backend) storage.Interface {
	t.Helper()
	s, err := b.Storage(podConfig)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func pod(name string, lbls map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: lbls}}
}

func createPod(t testing.TB, s storage.Interface, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	out := &corev1.Pod{}
	if err := s.Create(context.Background(), "/pods/ns/"+p.Name, p, out); err != nil {
		t.Fatalf("create %s: %v", p.Name, err)
	}
	return out
}

func setLabels(t testing.TB, s storage.Interface, name string, lbls map[string]string) *corev1.Pod {
	t.Helper()
	out := &corev1.Pod{}
	err := s.GuaranteedUpdate(context.Background(), "/pods/ns/"+name, out, false, nil, func(cur kruntime.Object) (kruntime.Object, error) {
		p := cur.(*corev1.Pod)
		p.Labels = lbls
		return p, nil
	})
	if err != nil {
		t.Fatalf("update %s: %v", name, err)
	}
	return out
}

// next returns the next event of w, failing after a generous guard time.
func next(t testing.TB, w storage.Watcher) storage.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(20 * time.Second):
		t.Fatal("no watch event within 20s")
	}
	return storage.Event{}
}

func evString(ev storage.Event) string {
	if st, ok := ev.Object.(*metav1.Status); ok {
		return fmt.Sprintf("%s %s", ev.Type, st.Reason)
	}
	p, ok := ev.Object.(*corev1.Pod)
	if !ok {
		return fmt.Sprintf("%s %T", ev.Type, ev.Object)
	}
	return fmt.Sprintf("%s %s@%s", ev.Type, p.Name, p.ResourceVersion)
}

// countingBackend counts the watches opened on the backend it wraps.
type countingBackend struct {
	*etcd.Backend
	watches, lists atomic.Int64
}

func (b *countingBackend) Storage(cfg storage.ResourceConfig) (storage.Interface, error) {
	s, err := b.Backend.Storage(cfg)
	return &countingStore{Interface: s, b: b}, err
}

type countingStore struct {
	storage.Interface
	b *countingBackend
}

func (s *countingStore) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj kruntime.Object) error {
	s.b.lists.Add(1)
	return s.Interface.GetList(ctx, key, opts, listObj)
}

func (s *countingStore) Watch(ctx context.Context, key string, opts storage.ListOptions) (storage.Watcher, error) {
	s.b.watches.Add(1)
	return s.Interface.Watch(ctx, key, opts)
}

func TestFanOutCostsOneBackendWatch(t *testing.T) {
	b := &countingBackend{Backend: newEtcdBackend(t)}
	c := newCacher(t, b, Config{})
	s := podStore(t, c)
	ctx := context.Background()
	const n = 20
	var ws []storage.Watcher
	for range n {
		w, err := s.Watch(ctx, "/pods/ns", storage.ListOptions{Recursive: true, ResourceVersion: "0"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		ws = append(ws, w)
	}
	p := createPod(t, s, pod("a", nil))
	var raw []byte
	for i, w := range ws {
		ev := next(t, w)
		if ev.Type != watch.Added || ev.Object.(*corev1.Pod).ResourceVersion != p.ResourceVersion {
			t.Fatalf("watcher %d: got %s, want ADDED a@%s", i, evString(ev), p.ResourceVersion)
		}
		// The change is encoded once, and every watcher gets those bytes.
		if len(ev.Raw) == 0 {
			t.Fatalf("watcher %d: event has no Raw", i)
		}
		if raw == nil {
			raw = ev.Raw
			decoded := &corev1.Pod{}
			if err := (storage.JSONCodec{}).Decode(raw, decoded); err != nil || decoded.ResourceVersion != p.ResourceVersion {
				t.Fatalf("Raw decodes to %v@%s (%v)", decoded.Name, decoded.ResourceVersion, err)
			}
		} else if &raw[0] != &ev.Raw[0] {
			t.Errorf("watcher %d got its own encoding of the change", i)
		}
	}
	if got := b.watches.Load(); got != 1 {
		t.Errorf("%d watchers opened %d backend watches, want 1", n, got)
	}
}

func TestConsistentListSeesWritesMadeElsewhere(t *testing.T) {
	b := &countingBackend{Backend: newEtcdBackend(t)}
	c := newCacher(t, b, Config{})
	cached, direct := podStore(t, c), podStore(t, b.Backend)
	ctx := context.Background()
	// Start the cache, then write behind its back and through another
	// resource, so the cache's own keys have not changed since.
	if err := cached.GetList(ctx, "/pods", storage.ListOptions{Recursive: true}, &corev1.PodList{}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		p := createPod(t, direct, pod(fmt.Sprintf("p%d", i), nil))
		l := &corev1.PodList{}
		if err := cached.GetList(ctx, "/pods", storage.ListOptions{Recursive: true}, l); err != nil {
			t.Fatal(err)
		}
		if len(l.Items) != i+1 {
			t.Fatalf("consistent list after %d creates has %d items", i+1, len(l.Items))
		}
		if lrv, prv := mustRV(t, l.ResourceVersion), mustRV(t, p.ResourceVersion); lrv < prv {
			t.Fatalf("list revision %d older than the write %d", lrv, prv)
		}
	}
	// A write elsewhere moves the backend's revision; a consistent list
	// still answers at (at least) that revision.
	if _, err := b.Storage(podConfig); err != nil {
		t.Fatal(err)
	}
	other, err := b.Storage(storage.ResourceConfig{Codec: storage.JSONCodec{}, NewFunc: func() kruntime.Object { return &corev1.ConfigMap{} }, NewListFunc: func() kruntime.Object { return &corev1.ConfigMapList{} }})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{}
	if err := other.Create(ctx, "/configmaps/ns/x", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "x"}}, cm); err != nil {
		t.Fatal(err)
	}
	rev, err := b.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l := &corev1.PodList{}
	if err := cached.GetList(ctx, "/pods", storage.ListOptions{Recursive: true}, l); err != nil {
		t.Fatal(err)
	}
	got, _ := storage.ParseResourceVersion(l.ResourceVersion)
	if got < rev {
		t.Errorf("consistent list at revision %d, backend was at %d before it", got, rev)
	}
	// Every list after the cache's first came from the cache: progress
	// bookmarks showed it was current.
	if n := b.lists.Load(); n != 1 {
		t.Errorf("the backend served %d lists, want only the cache's initial one", n)
	}
}

func TestWatchFromWindowAndExpired(t *testing.T) {
	b := newEtcdBackend(t)
	c := newCacher(t, b, Config{WindowSize: 4})
	s := podStore(t, c)
	ctx := context.Background()
	if err := s.GetList(ctx, "/pods", storage.ListOptions{Recursive: true, ResourceVersion: "0"}, &corev1.PodList{}); err != nil {
		t.Fatal(err)
	}
	var created []*corev1.Pod
	for i := range 6 {
		created = append(created, createPod(t, s, pod(fmt.Sprintf("p%d", i), nil)))
	}
	last := created[5].ResourceVersion
	// Wait for the cache to hold every write.
	if err := s.Get(ctx, "/pods/ns/p5", storage.GetOptions{ResourceVersion: last}, &corev1.Pod{}); err != nil {
		t.Fatal(err)
	}
	// The window holds the last 4 events: from p2's revision, p3..p5 replay.
	w, err := s.Watch(ctx, "/pods/ns", storage.ListOptions{Recursive: true, ResourceVersion: created[2].ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, want := range created[3:] {
		ev := next(t, w)
		if ev.Type != watch.Added || ev.Object.(*corev1.Pod).Name != want.Name {
			t.Fatalf("replay: got %s, want ADDED %s", evString(ev), want.Name)
		}
	}
	// From p0's revision, p1 has left the window: the backend replays it.
	w2, err := s.Watch(ctx, "/pods/ns", storage.ListOptions{Recursive: true, ResourceVersion: created[0].ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	for _, want := range created[1:] {
		ev := next(t, w2)
		if ev.Type != watch.Added || ev.Object.(*corev1.Pod).Name != want.Name {
			t.Fatalf("replay from the backend: got %s, want ADDED %s", evString(ev), want.Name)
		}
	}
	// Once the backend compacted that history too, the answer is 410.
	rev, _ := storage.ParseResourceVersion(last)
	if err := c.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
	for _, from := range []string{created[0].ResourceVersion, created[3].ResourceVersion} {
		w3, err := s.Watch(ctx, "/pods/ns", storage.ListOptions{Recursive: true, ResourceVersion: from})
		if err != nil {
			t.Fatal(err)
		}
		ev := next(t, w3)
		w3.Stop()
		if st, ok := ev.Object.(*metav1.Status); ev.Type != watch.Error || !ok || st.Code != 410 {
			t.Fatalf("watch from compacted revision %s: got %s, want a 410 error", from, evString(ev))
		}
	}
}

func TestPredicateTransitions(t *testing.T) {
	b := newEtcdBackend(t)
	c := newCacher(t, b, Config{})
	s := podStore(t, c)
	ctx := context.Background()
	sel := labels.SelectorFromSet(labels.Set{"app": "web"})
	w, err := s.Watch(ctx, "/pods", storage.ListOptions{Recursive: true, Predicate: storage.Predicate{Label: sel}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	createPod(t, s, pod("a", nil))
	setLabels(t, s, "a", map[string]string{"app": "web"})
	setLabels(t, s, "a", map[string]string{"app": "web", "x": "y"})
	gone := setLabels(t, s, "a", map[string]string{"app": "db"})
	var got []string
	for range 3 {
		got = append(got, string(next(t, w).Type))
	}
	want := []string{"ADDED", "MODIFIED", "DELETED"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	_ = gone
}

func TestSlowWatcherIsClosedWithExpired(t *testing.T) {
	b := newEtcdBackend(t)
	c := newCacher(t, b, Config{WatchBufferSize: 2})
	s := podStore(t, c)
	ctx := context.Background()
	slow, err := s.Watch(ctx, "/pods", storage.ListOptions{Recursive: true, ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Stop()
	fast, err := s.Watch(ctx, "/pods", storage.ListOptions{Recursive: true, ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Stop()
	// The fast reader takes every event as it comes; the slow one reads
	// nothing until all writes are done.
	const n = 10
	for i := range n {
		createPod(t, s, pod(fmt.Sprintf("p%d", i), nil))
		if ev := next(t, fast); ev.Type != watch.Added {
			t.Fatalf("fast watcher: %s", evString(ev))
		}
	}
	var events []string
	for ev := range slow.ResultChan() {
		events = append(events, evString(ev))
	}
	if len(events) == 0 || events[len(events)-1] != "ERROR Expired" {
		t.Fatalf("slow watcher got %v, want some events then ERROR Expired", events)
	}
	if len(events) > 1+2+1 {
		t.Errorf("slow watcher got %d events, more than its buffer allows", len(events))
	}
}

// faultBackend lets a test break the backend watches it hands out.
type faultBackend struct {
	*etcd.Backend
	mu       sync.Mutex
	watchers []*faultWatcher
	// pending breaks the next watch opened, when none was open to break.
	pending int32
}

func (b *faultBackend) Storage(cfg storage.ResourceConfig) (storage.Interface, error) {
	s, err := b.Backend.Storage(cfg)
	return &faultStore{Interface: s, b: b}, err
}

// breakWatches ends every open backend watch with an Error event of code.
func (b *faultBackend) breakWatches(code int32) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.watchers) == 0 {
		b.pending = code
		return
	}
	for _, w := range b.watchers {
		w.once.Do(func() {
			w.code = code
			close(w.broken)
		})
	}
	b.watchers = nil
}

type faultStore struct {
	storage.Interface
	b *faultBackend
}

type faultWatcher struct {
	inner  storage.Watcher
	out    chan storage.Event
	broken chan struct{}
	code   int32 // set before broken closes
	once   sync.Once
	stop   chan struct{}
	done   chan struct{}
	sOnce  sync.Once
}

func (s *faultStore) Watch(ctx context.Context, key string, opts storage.ListOptions) (storage.Watcher, error) {
	inner, err := s.Interface.Watch(ctx, key, opts)
	if err != nil {
		return nil, err
	}
	w := &faultWatcher{inner: inner, out: make(chan storage.Event), broken: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	s.b.mu.Lock()
	if code := s.b.pending; code != 0 {
		s.b.pending = 0
		w.code = code
		close(w.broken)
		w.once.Do(func() {})
	} else {
		s.b.watchers = append(s.b.watchers, w)
	}
	s.b.mu.Unlock()
	go func() {
		defer close(w.done)
		defer close(w.out)
		defer inner.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-w.broken:
				st := metav1.Status{Status: metav1.StatusFailure, Code: w.code, Message: "injected"}
				select {
				case w.out <- storage.Event{Type: watch.Error, Object: &st}:
				case <-w.stop:
				}
				return
			case ev, ok := <-inner.ResultChan():
				if !ok {
					return
				}
				select {
				case w.out <- ev:
				case <-w.stop:
					return
				}
			}
		}
	}()
	return w, nil
}

func (w *faultWatcher) ResultChan() <-chan storage.Event { return w.out }
func (w *faultWatcher) Stop() {
	w.sOnce.Do(func() { close(w.stop) })
	<-w.done
}

func TestRewatchKeepsWatchers(t *testing.T) {
	b := &faultBackend{Backend: newEtcdBackend(t)}
	c := newCacher(t, b, Config{MinRetryDelay: time.Millisecond})
	s := podStore(t, c)
	ctx := context.Background()
	w, err := s.Watch(ctx, "/pods", storage.ListOptions{Recursive: true, ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	a := createPod(t, s, pod("a", nil))
	if ev := next(t, w); ev.Type != watch.Added || ev.Object.(*corev1.Pod).Name != "a" {
		t.Fatalf("got %s", evString(ev))
	}
	// A transient failure (etcd lost its leader, say): the cache re-watches
	// from its revision and its watchers see nothing but the next changes.
	b.breakWatches(500)
	bp := createPod(t, s, pod("b", nil))
	if ev := next(t, w); ev.Type != watch.Added || ev.Object.(*corev1.Pod).ResourceVersion != bp.ResourceVersion {
		t.Fatalf("after a re-watch got %s, want ADDED b@%s", evString(ev), bp.ResourceVersion)
	}
	// The window still reaches back across the re-watch.
	w2, err := s.Watch(ctx, "/pods", storage.ListOptions{Recursive: true, ResourceVersion: a.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	if ev := next(t, w2); ev.Object.(*corev1.Pod).Name != "b" {
		t.Fatalf("replay across the re-watch got %s", evString(ev))
	}
}

func TestRelistAfterBackendWatchFails(t *testing.T) {
	b := &faultBackend{Backend: newEtcdBackend(t)}
	c := newCacher(t, b, Config{MinRetryDelay: time.Millisecond})
	s := podStore(t, c)
	ctx := context.Background()
	createPod(t, s, pod("a", nil))
	w, err := s.Watch(ctx, "/pods", storage.ListOptions{Recursive: true, ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if ev := next(t, w); ev.Type != watch.Added {
		t.Fatalf("initial event %s", evString(ev))
	}
	// An Expired backend watch forces a relist: the cache closes its
	// watchers so that they re-watch from their last revision.
	b.breakWatches(410)
	for ev := range w.ResultChan() {
		t.Fatalf("watcher got %s after the backend watch broke, want a close", evString(ev))
	}
	// A write made while the cache relists is seen by a consistent list
	// and by a new watch from the revision before it.
	before, err := c.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p := createPod(t, s, pod("b", nil))
	l := &corev1.PodList{}
	if err := s.GetList(ctx, "/pods", storage.ListOptions{Recursive: true}, l); err != nil || len(l.Items) != 2 {
		t.Fatalf("list after relist: %v, %d items", err, len(l.Items))
	}
	w2, err := s.Watch(ctx, "/pods", storage.ListOptions{Recursive: true, ResourceVersion: fmt.Sprint(before)})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	ev := next(t, w2)
	if ev.Type != watch.Added || ev.Object.(*corev1.Pod).ResourceVersion != p.ResourceVersion {
		t.Fatalf("watch from before the write: got %s, want ADDED b@%s", evString(ev), p.ResourceVersion)
	}
}

func mustRV(t testing.TB, s string) uint64 {
	t.Helper()
	rv, err := storage.ParseResourceVersion(s)
	if err != nil || rv == 0 {
		t.Fatalf("bad resourceVersion %q", s)
	}
	return rv
}

func TestBookmarksWhileIdle(t *testing.T) {
	fc := clocktesting.NewFakeClock(time.Now())
	// etcd answers a progress request only when every watch on the client's
	// stream is caught up: a client of its own keeps other tests' watches
	// out of the way.
	newEtcdBackend(t)
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{etcdSrv.ClientURL()}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	b, err := etcd.New(etcd.Config{Client: client, Prefix: fmt.Sprintf("/cacher-test-%d", prefixSeq.Add(1))})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c := newCacher(t, b, Config{Clock: fc, BookmarkInterval: time.Minute})
	s := podStore(t, c)
	ctx := context.Background()
	// Start the cache; its backend watch then runs the bookmark ticker.
	if err := s.GetList(ctx, "/pods", storage.ListOptions{Recursive: true, ResourceVersion: "0"}, &corev1.PodList{}); err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(ctx, "/pods", storage.ListOptions{Recursive: true, ResourceVersion: "0", ProgressNotify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// A write elsewhere moves the revision; the pods stay idle.
	other, err := b.Storage(storage.ResourceConfig{Codec: storage.JSONCodec{}, NewFunc: func() kruntime.Object { return &corev1.ConfigMap{} }, NewListFunc: func() kruntime.Object { return &corev1.ConfigMapList{} }})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{}
	if err := other.Create(ctx, "/configmaps/ns/x", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "x"}}, cm); err != nil {
		t.Fatal(err)
	}
	// etcd drops a progress request that reaches it before the cache's
	// watch is set up there, so tick until one is answered; each tick is
	// one request.
	var ev storage.Event
	for attempt := 0; ev.Type == ""; attempt++ {
		if attempt == 40 {
			t.Fatal("no bookmark after 40 ticks")
		}
		deadline := time.Now().Add(20 * time.Second)
		for !fc.HasWaiters() {
			if time.Now().After(deadline) {
				t.Fatal("no bookmark ticker after 20s")
			}
			runtime.Gosched()
		}
		fc.Step(time.Minute)
		select {
		case ev = <-w.ResultChan():
		case <-time.After(500 * time.Millisecond): // a guard per tick, not pacing
		}
	}
	if ev.Type != watch.Bookmark {
		t.Fatalf("got %s, want a bookmark", evString(ev))
	}
	if got, want := mustRV(t, ev.Object.(*corev1.Pod).ResourceVersion), mustRV(t, cm.ResourceVersion); got < want {
		t.Errorf("bookmark at %d, want at least %d", got, want)
	}
}
