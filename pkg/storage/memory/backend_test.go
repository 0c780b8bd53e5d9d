package memory_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kplane/kplane/pkg/storage"
	"github.com/kplane/kplane/pkg/storage/memory"
)

// guard bounds waits for events; reaching it fails the test.
const guard = 20 * time.Second

func configMaps(t testing.TB, b storage.Backend) storage.Interface {
	t.Helper()
	s, err := b.Storage(storage.ResourceConfig{
		Codec:       storage.JSONCodec{},
		NewFunc:     func() runtime.Object { return &corev1.ConfigMap{} },
		NewListFunc: func() runtime.Object { return &corev1.ConfigMapList{} },
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func cm(name, v string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Data: map[string]string{"v": v}}
}

func put(t testing.TB, s storage.Interface, name, v string) uint64 {
	t.Helper()
	out := &corev1.ConfigMap{}
	err := s.GuaranteedUpdate(context.Background(), "/configmaps/ns/"+name, out, true, nil, func(runtime.Object) (runtime.Object, error) {
		return cm(name, v), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rv, err := storage.ObjectResourceVersion(out)
	if err != nil {
		t.Fatal(err)
	}
	return rv
}

func next(t testing.TB, w storage.Watcher) (storage.Event, bool) {
	t.Helper()
	timer := time.NewTimer(guard)
	defer timer.Stop()
	select {
	case e, ok := <-w.ResultChan():
		return e, ok
	case <-timer.C:
		t.Fatalf("no event within %v", guard)
	}
	return storage.Event{}, false
}

func TestNewConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  memory.Config
		ok   bool
	}{
		{"defaults", memory.Config{}, true},
		{"negative revisions", memory.Config{HistoryRevisions: -1}, false},
		{"negative duration", memory.Config{HistoryDuration: -time.Second}, false},
		{"negative buffer", memory.Config{WatchBufferSize: -1}, false},
		{"negative progress", memory.Config{ProgressNotifyInterval: -time.Second}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := memory.New(tc.cfg)
			if (err == nil) != tc.ok {
				t.Fatalf("New: %v, want ok %v", err, tc.ok)
			}
			if b != nil {
				_ = b.Close()
			}
		})
	}
	b := newBackend(t, memory.Config{})
	for _, rc := range []storage.ResourceConfig{
		{},
		{Codec: storage.JSONCodec{}, NewFunc: func() runtime.Object { return &corev1.ConfigMap{} }},
		{Codec: storage.JSONCodec{}, NewFunc: func() runtime.Object { return &corev1.ConfigMap{} }, NewListFunc: func() runtime.Object { return &corev1.ConfigMap{} }},
	} {
		if _, err := b.Storage(rc); err == nil {
			t.Errorf("Storage(%+v) succeeded", rc)
		}
	}
}

func TestHistoryRevisions(t *testing.T) {
	b := newBackend(t, memory.Config{HistoryRevisions: 5})
	s := configMaps(t, b)
	var revs []uint64
	for i := range 12 {
		revs = append(revs, put(t, s, fmt.Sprint("k", i%3), fmt.Sprint(i)))
	}
	cur := revs[len(revs)-1]
	ctx := context.Background()
	listAt := func(rev uint64) error {
		return s.GetList(ctx, "/configmaps", storage.ListOptions{Recursive: true, ResourceVersion: fmt.Sprint(rev), ResourceVersionMatch: metav1.ResourceVersionMatchExact}, &corev1.ConfigMapList{})
	}
	if err := listAt(cur - 5); err != nil {
		t.Errorf("list at the oldest kept revision %d: %v", cur-5, err)
	}
	if err := listAt(cur - 6); !storage.IsExpired(err) {
		t.Errorf("list at revision %d beyond the history: %v, want expired", cur-6, err)
	}
	if _, err := s.Watch(ctx, "/configmaps", storage.ListOptions{Recursive: true, ResourceVersion: fmt.Sprint(cur - 6)}); !storage.IsExpired(err) {
		t.Errorf("watch from beyond the history: %v, want expired", err)
	}
	w, err := s.Watch(ctx, "/configmaps", storage.ListOptions{Recursive: true, ResourceVersion: fmt.Sprint(cur - 5)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for want := cur - 4; want <= cur; want++ {
		e, _ := next(t, w)
		if rv, _ := storage.ObjectResourceVersion(e.Object); rv != want {
			t.Fatalf("replayed event at %d, want %d", rv, want)
		}
	}
}

func TestHistoryDuration(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	b := newBackend(t, memory.Config{Clock: clk, HistoryDuration: time.Minute})
	s := configMaps(t, b)
	r1 := put(t, s, "a", "1")
	r2 := put(t, s, "a", "2")
	clk.Step(30 * time.Second)
	r3 := put(t, s, "b", "1")
	ctx := context.Background()
	exact := func(rev uint64) error {
		return s.GetList(ctx, "/configmaps", storage.ListOptions{Recursive: true, ResourceVersion: fmt.Sprint(rev), ResourceVersionMatch: metav1.ResourceVersionMatchExact}, &corev1.ConfigMapList{})
	}
	if err := exact(r1); err != nil {
		t.Fatalf("list at %d within the history: %v", r1, err)
	}
	clk.Step(31 * time.Second) // r1 and r2 are now older than a minute
	put(t, s, "c", "1")        // compaction runs as writes arrive
	if err := exact(r1); !storage.IsExpired(err) {
		t.Errorf("list at %d after it aged out: %v, want expired", r1, err)
	}
	if err := exact(r2); err != nil {
		t.Errorf("list at %d, the oldest readable revision: %v", r2, err)
	}
	if err := exact(r3); err != nil {
		t.Errorf("list at %d within the history: %v", r3, err)
	}
}

func TestProgressNotifyTicker(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	b := newBackend(t, memory.Config{Clock: clk, ProgressNotifyInterval: 10 * time.Second})
	s := configMaps(t, b)
	rev := put(t, s, "other", "1")
	w, err := s.Watch(context.Background(), "/configmaps/ns/a", storage.ListOptions{ResourceVersion: fmt.Sprint(rev), ProgressNotify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	rev = put(t, s, "b", "1") // not watched; the bookmark still reports it
	clk.Step(10 * time.Second)
	e, _ := next(t, w)
	if e.Type != watch.Bookmark {
		t.Fatalf("got %s, want BOOKMARK", e.Type)
	}
	if got, _ := storage.ObjectResourceVersion(e.Object); got != rev {
		t.Errorf("bookmark at %d, want %d", got, rev)
	}
	if _, ok := e.Object.(*corev1.ConfigMap); !ok {
		t.Errorf("bookmark object is %T, want the resource's type", e.Object)
	}
}

func TestSlowWatcherClosed(t *testing.T) {
	b := newBackend(t, memory.Config{HistoryRevisions: 10, WatchBufferSize: 2})
	s := configMaps(t, b)
	start := put(t, s, "a", "0")
	w, err := s.Watch(context.Background(), "/configmaps", storage.ListOptions{Recursive: true, ResourceVersion: fmt.Sprint(start)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// Nobody reads while 50 writes go in: none of them waits for the watcher.
	for i := range 50 {
		put(t, s, "a", fmt.Sprint(i+1))
	}
	want := start + 1
	for {
		e, ok := next(t, w)
		if !ok {
			t.Fatal("channel closed without an Error event")
		}
		if e.Type == watch.Error {
			st, ok := e.Object.(*metav1.Status)
			if !ok || st.Code != http.StatusGone || st.Reason != metav1.StatusReasonExpired {
				t.Fatalf("error event %+v, want 410 Expired", e.Object)
			}
			break
		}
		if rv, _ := storage.ObjectResourceVersion(e.Object); rv != want {
			t.Fatalf("event at %d, want %d: the events before the error must have no gap", rv, want)
		}
		want++
	}
	if want > start+50 {
		t.Fatalf("the slow watcher got every event; it should have fallen behind")
	}
	if _, ok := next(t, w); ok {
		t.Fatal("channel open after the Error event")
	}
}

func TestSharedDecode(t *testing.T) {
	b := newBackend(t, memory.Config{})
	s := configMaps(t, b)
	rev := put(t, s, "x", "0")
	w1, _ := s.Watch(context.Background(), "/configmaps", storage.ListOptions{Recursive: true, ResourceVersion: fmt.Sprint(rev)})
	w2, _ := s.Watch(context.Background(), "/configmaps/ns/a", storage.ListOptions{ResourceVersion: fmt.Sprint(rev)})
	defer w1.Stop()
	defer w2.Stop()
	put(t, s, "a", "1")
	e1, _ := next(t, w1)
	e2, _ := next(t, w2)
	if e1.Object != e2.Object || &e1.Raw[0] != &e2.Raw[0] {
		t.Error("watchers of one change got separately decoded objects")
	}
}

func TestClose(t *testing.T) {
	b, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	s := configMaps(t, b)
	w, err := s.Watch(context.Background(), "/configmaps", storage.ListOptions{Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := next(t, w); ok {
		t.Error("watch open after Close")
	}
	w.Stop()
	_ = b.Close()
	ctx := context.Background()
	if err := s.Create(ctx, "/configmaps/ns/a", cm("a", "1"), &corev1.ConfigMap{}); !errors.Is(err, memory.ErrClosed) {
		t.Errorf("Create after Close: %v", err)
	}
	if _, err := b.CurrentRevision(ctx); !errors.Is(err, memory.ErrClosed) {
		t.Errorf("CurrentRevision after Close: %v", err)
	}
	if _, err := s.Watch(ctx, "/configmaps", storage.ListOptions{Recursive: true}); !errors.Is(err, memory.ErrClosed) {
		t.Errorf("Watch after Close: %v", err)
	}
}

// TestIdleWatcherOutlivesHistory checks that a watcher whose keys do not
// change is not expired when other resources' writes roll the history.
func TestIdleWatcherOutlivesHistory(t *testing.T) {
	b := newBackend(t, memory.Config{HistoryRevisions: 5})
	cms := configMaps(t, b)
	pods, err := b.Storage(storage.ResourceConfig{
		Codec:       storage.JSONCodec{},
		NewFunc:     func() runtime.Object { return &corev1.Pod{} },
		NewListFunc: func() runtime.Object { return &corev1.PodList{} },
	})
	if err != nil {
		t.Fatal(err)
	}
	start := put(t, cms, "a", "0")
	w, err := pods.Watch(context.Background(), "/pods", storage.ListOptions{Recursive: true, ResourceVersion: fmt.Sprint(start)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for i := range 50 {
		put(t, cms, "a", fmt.Sprint(i+1))
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	out := &corev1.Pod{}
	if err := pods.Create(context.Background(), "/pods/ns/p", p, out); err != nil {
		t.Fatal(err)
	}
	e, ok := next(t, w)
	if !ok || e.Type != watch.Added || e.Object.(*corev1.Pod).ResourceVersion != out.ResourceVersion {
		t.Fatalf("idle pod watcher got %s %v, want the pod's creation", e.Type, e.Object)
	}
}
