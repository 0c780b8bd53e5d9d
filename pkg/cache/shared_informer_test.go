package cache_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/cache/cachetest"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// recorder is a Handler that records what it is told.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func key(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

func (r *recorder) rec(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, s)
}
func (r *recorder) OnAdd(p *corev1.Pod, initial bool) {
	r.rec(fmt.Sprintf("add %s %s initial=%v", key(p), p.ResourceVersion, initial))
}
func (r *recorder) OnUpdate(old, p *corev1.Pod) {
	r.rec(fmt.Sprintf("update %s %s->%s", key(p), old.ResourceVersion, p.ResourceVersion))
}
func (r *recorder) OnDelete(obj any) {
	p, err := cache.Unwrap[*corev1.Pod](obj)
	if err != nil {
		r.rec("junk: " + err.Error())
		return
	}
	if d, ok := obj.(cache.DeletedFinalStateUnknown[*corev1.Pod]); ok {
		r.rec(fmt.Sprintf("delete %s %s tombstone=%s", key(p), p.ResourceVersion, d.Key))
		return
	}
	r.rec(fmt.Sprintf("delete %s %s", key(p), p.ResourceVersion))
}
func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}

func checkEvents(t *testing.T, r *recorder, want ...string) {
	t.Helper()
	settle()
	if d := cmp.Diff(want, r.take()); d != "" {
		t.Errorf("events -want +got:\n%s", d)
	}
}

// startInformer runs an informer in the current synctest bubble until the
// end of the test.
func startInformer(t *testing.T, inf *cache.SharedIndexInformer[*corev1.Pod]) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func newInformer(t *testing.T, src cache.ListerWatcher[*corev1.Pod], edit func(*cache.InformerConfig[*corev1.Pod])) *cache.SharedIndexInformer[*corev1.Pod] {
	t.Helper()
	cfg := cache.InformerConfig[*corev1.Pod]{ListerWatcher: src, Logger: quiet}
	if edit != nil {
		edit(&cfg)
	}
	inf, err := cache.NewSharedIndexInformer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return inf
}

func addHandler(t *testing.T, inf *cache.SharedIndexInformer[*corev1.Pod], h cache.Handler[*corev1.Pod], resync time.Duration) *cache.Registration[*corev1.Pod] {
	t.Helper()
	reg, err := inf.AddEventHandler(h, cache.HandlerOptions{ResyncPeriod: resync})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func TestInformerDeliversTombstoneForDeletionMissedWhileWatchDown(t *testing.T) {
	for _, watchList := range []bool{false, true} {
		t.Run(fmt.Sprint("watchList=", watchList), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := cachetest.New[*corev1.Pod](cachetest.Config{})
				create(t, src, "a", "b", "c")
				inf := newInformer(t, src, func(c *cache.InformerConfig[*corev1.Pod]) { c.DisableWatchList = !watchList })
				rec := &recorder{}
				reg := addHandler(t, inf, rec, 0)
				startInformer(t, inf)
				checkEvents(t, rec, "add ns/a 2 initial=true", "add ns/b 3 initial=true", "add ns/c 4 initial=true")
				if !inf.HasSynced() || !reg.HasSynced() {
					t.Fatal("not synced")
				}
				// While the watch is down: b is updated then deleted, c is
				// updated, d is created; then history is compacted, so the
				// informer must relist.
				src.DropWatches()
				b, _ := src.Get("ns/b")
				_, _ = src.Update(b)
				_, _ = src.Delete("ns/b")
				c, _ := src.Get("ns/c")
				_, _ = src.Update(c)
				create(t, src, "d")
				src.Compact()
				// b reaches OnDelete as a tombstone with its last known state
				// (rv 3), a is unchanged and not re-announced, c is an update,
				// d an add that is not part of the initial list.
				settle()
				got := rec.take()
				want := []string{"update ns/c 4->7", "add ns/d 8 initial=false", "delete ns/b 3 tombstone=ns/b"}
				if d := cmp.Diff(want, got, sortStrings); d != "" {
					t.Errorf("events -want +got:\n%s", d)
				}
				if d := cmp.Diff([]string{"ns/a", "ns/c", "ns/d"}, inf.Indexer().ListKeys()); d != "" {
					t.Error(d)
				}
			})
		})
	}
}

var sortStrings = cmp.Transformer("sort", func(in []string) []string {
	out := append([]string(nil), in...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
})

func TestInformerExpiredWatchRelistsWithoutLosingOrMistypingEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := cachetest.New[*corev1.Pod](cachetest.Config{})
		create(t, src, "a", "b")
		inf := newInformer(t, src, nil)
		rec := &recorder{}
		addHandler(t, inf, rec, 0)
		var errs []error
		var mu sync.Mutex
		if err := inf.SetWatchErrorHandler(func(_ context.Context, err error) {
			mu.Lock()
			defer mu.Unlock()
			errs = append(errs, err)
		}); err != nil {
			t.Fatal(err)
		}
		startInformer(t, inf)
		checkEvents(t, rec, "add ns/a 2 initial=true", "add ns/b 3 initial=true")
		if err := inf.SetWatchErrorHandler(nil); err == nil {
			t.Error("SetWatchErrorHandler after Run: no error")
		}
		create(t, src, "c")
		checkEvents(t, rec, "add ns/c 4 initial=false")
		a, _ := src.Get("ns/a")
		_, _ = src.Update(a)
		src.ExpireWatches()
		// Changes between the expiry and the relist.
		_, _ = src.Delete("ns/c")
		create(t, src, "e")
		settle()
		want := []string{"update ns/a 2->5", "delete ns/c 4 tombstone=ns/c", "add ns/e 7 initial=false"}
		if d := cmp.Diff(want, rec.take(), sortStrings); d != "" {
			t.Errorf("events -want +got:\n%s", d)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(errs) != 1 || !cache.IsExpired(errs[0]) {
			t.Errorf("watch errors = %v, want one 410", errs)
		}
	})
}

// gate is a handler that blocks in every call until released.
type gate struct {
	recorder
	open chan struct{}
}

func (g *gate) OnAdd(p *corev1.Pod, initial bool) { <-g.open; g.recorder.OnAdd(p, initial) }

func TestInformerSlowHandlerDoesNotDelayOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := cachetest.New[*corev1.Pod](cachetest.Config{})
		inf := newInformer(t, src, nil)
		slow := &gate{open: make(chan struct{})}
		fast := &recorder{}
		slowReg := addHandler(t, inf, slow, 0)
		fastReg := addHandler(t, inf, fast, 0)
		startInformer(t, inf)
		settle()
		var want []string
		for i := range 100 {
			create(t, src, fmt.Sprint("p", i))
			want = append(want, fmt.Sprintf("add ns/p%d %d initial=false", i, i+2))
		}
		checkEvents(t, fast, want...)
		if got := len(inf.Indexer().ListKeys()); got != 100 {
			t.Errorf("store has %d objects while a handler is blocked", got)
		}
		// The slow handler is stuck in its first call with the rest queued.
		if got := slowReg.Pending(); got != 100 {
			t.Errorf("slow handler pending = %d, want 100", got)
		}
		if fastReg.Pending() != 0 {
			t.Errorf("fast handler pending = %d", fastReg.Pending())
		}
		close(slow.open)
		checkEvents(t, &slow.recorder, want...)
	})
}

func TestInformerRemovedHandlerGetsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := cachetest.New[*corev1.Pod](cachetest.Config{})
		inf := newInformer(t, src, nil)
		kept, removed := &recorder{}, &recorder{}
		addHandler(t, inf, kept, 0)
		reg := addHandler(t, inf, removed, 0)
		startInformer(t, inf)
		settle()
		create(t, src, "a")
		checkEvents(t, removed, "add ns/a 2 initial=false")
		reg.Remove()
		reg.Remove()
		create(t, src, "b")
		checkEvents(t, removed)
		checkEvents(t, kept, "add ns/a 2 initial=false", "add ns/b 3 initial=false")
	})
}

func TestInformerLateHandlerGetsCurrentContent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := cachetest.New[*corev1.Pod](cachetest.Config{})
		create(t, src, "a", "b")
		inf := newInformer(t, src, nil)
		startInformer(t, inf)
		settle()
		if !inf.HasSynced() {
			t.Fatal("informer without handlers did not sync")
		}
		late := &gate{open: make(chan struct{})}
		reg := addHandler(t, inf, late, 0)
		settle()
		if reg.HasSynced() {
			t.Error("registration synced before its handler saw the current content")
		}
		close(late.open)
		checkEvents(t, &late.recorder, "add ns/a 2 initial=true", "add ns/b 3 initial=true")
		if !reg.HasSynced() {
			t.Error("registration not synced")
		}
		create(t, src, "c")
		checkEvents(t, &late.recorder, "add ns/c 4 initial=false")
	})
}

func TestInformerPerHandlerResync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := cachetest.New[*corev1.Pod](cachetest.Config{})
		create(t, src, "a")
		clk := testingclock.NewFakeClock(time.Unix(0, 0))
		inf := newInformer(t, src, func(c *cache.InformerConfig[*corev1.Pod]) { c.Clock = clk })
		every, never := &recorder{}, &recorder{}
		addHandler(t, inf, every, time.Minute)
		addHandler(t, inf, never, 0)
		startInformer(t, inf)
		checkEvents(t, every, "add ns/a 2 initial=true")
		checkEvents(t, never, "add ns/a 2 initial=true")
		clk.Step(time.Minute)
		checkEvents(t, every, "update ns/a 2->2")
		checkEvents(t, never)
		clk.Step(time.Minute)
		checkEvents(t, every, "update ns/a 2->2")
	})
}

func TestInformerTransform(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := cachetest.New[*corev1.Pod](cachetest.Config{})
		p := pod("ns", "a", "", "big", "label")
		_, _ = src.Create(p)
		inf := newInformer(t, src, func(c *cache.InformerConfig[*corev1.Pod]) {
			c.Transform = func(p *corev1.Pod) (*corev1.Pod, error) {
				c := p.DeepCopy()
				c.Labels = nil
				return c, nil
			}
		})
		var seen []map[string]string
		var mu sync.Mutex
		addHandler(t, inf, cache.HandlerFuncs[*corev1.Pod]{AddFunc: func(p *corev1.Pod, _ bool) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, p.Labels)
		}}, 0)
		startInformer(t, inf)
		settle()
		got, _ := inf.Indexer().GetByKey("ns/a")
		if got == nil || got.Labels != nil {
			t.Errorf("stored object %v still has labels", got)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(seen) != 1 || seen[0] != nil {
			t.Errorf("handler saw %v", seen)
		}
	})
}

func TestInformerRunStopsAndRejectsLateHandlers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := cachetest.New[*corev1.Pod](cachetest.Config{})
		inf := newInformer(t, src, nil)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); inf.Run(ctx) }()
		settle()
		cancel()
		<-done
		if !inf.IsStopped() {
			t.Error("not stopped")
		}
		if src.OpenWatches() != 0 {
			t.Errorf("%d watches still open", src.OpenWatches())
		}
		if _, err := inf.AddEventHandler(&recorder{}, cache.HandlerOptions{}); err == nil {
			t.Error("AddEventHandler after stop: no error")
		}
	})
}

func TestUnwrap(t *testing.T) {
	p := pod("ns", "a", "1")
	tests := []struct {
		name    string
		in      any
		wantErr bool
	}{
		{"object", p, false},
		{"tombstone", cache.DeletedFinalStateUnknown[*corev1.Pod]{Key: "ns/a", Obj: p}, false},
		{"tombstone pointer", &cache.DeletedFinalStateUnknown[*corev1.Pod]{Key: "ns/a", Obj: p}, false},
		{"nil", nil, true},
		{"typed nil", (*corev1.Pod)(nil), true},
		{"empty tombstone", cache.DeletedFinalStateUnknown[*corev1.Pod]{Key: "ns/a"}, true},
		{"nil tombstone pointer", (*cache.DeletedFinalStateUnknown[*corev1.Pod])(nil), true},
		{"other type", &corev1.Node{}, true},
		{"tombstone of other type", cache.DeletedFinalStateUnknown[*corev1.Node]{Key: "n", Obj: &corev1.Node{}}, true},
		{"string", "ns/a", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cache.Unwrap[*corev1.Pod](tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && got != p {
				t.Errorf("got %v", got)
			}
		})
	}
}

func TestNewSharedIndexInformerValidates(t *testing.T) {
	if _, err := cache.NewSharedIndexInformer(cache.InformerConfig[*corev1.Pod]{}); err == nil {
		t.Error("no ListerWatcher: no error")
	}
	_, err := cache.NewSharedIndexInformer(cache.InformerConfig[*corev1.Pod]{
		ListerWatcher: cachetest.New[*corev1.Pod](cachetest.Config{}),
		Indexers:      cache.Indexers[*corev1.Pod]{cache.NamespaceIndex: cache.NamespaceIndexFunc[*corev1.Pod]},
	})
	if err == nil {
		t.Error("redefined namespace index: no error")
	}
	_ = errors.New
}

func TestWaitForCacheSync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		ready := false
		isReady := func() bool { mu.Lock(); defer mu.Unlock(); return ready }
		done := make(chan bool)
		go func() { done <- cache.WaitForCacheSync(context.Background(), func() bool { return true }, isReady) }()
		time.Sleep(time.Second)
		mu.Lock()
		ready = true
		mu.Unlock()
		if !<-done {
			t.Error("WaitForCacheSync = false once synced")
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() { done <- cache.WaitForCacheSync(ctx, func() bool { return false }) }()
		time.Sleep(time.Second)
		cancel()
		if <-done {
			t.Error("WaitForCacheSync = true on a cancelled context")
		}
	})
}

func TestInformerHandlerMayRemoveItself(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := cachetest.New[*corev1.Pod](cachetest.Config{})
		inf := newInformer(t, src, nil)
		rec := &recorder{}
		var reg *cache.Registration[*corev1.Pod]
		var mu sync.Mutex
		reg = addHandler(t, inf, cache.HandlerFuncs[*corev1.Pod]{AddFunc: func(p *corev1.Pod, initial bool) {
			rec.OnAdd(p, initial)
			mu.Lock()
			defer mu.Unlock()
			reg.Remove()
		}}, 0)
		startInformer(t, inf)
		settle()
		create(t, src, "a", "b", "c")
		checkEvents(t, rec, "add ns/a 2 initial=false")
		if n := reg.Pending(); n != 0 {
			t.Errorf("removed handler has %d pending", n)
		}
	})
}
