package cache_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/cache/cachetest"
)

// recordingStore records what a Reflector writes.
type recordingStore struct {
	mu  sync.Mutex
	ops []string
}

func (s *recordingStore) rec(op string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ops = append(s.ops, op)
	return nil
}
func (s *recordingStore) Add(p *corev1.Pod) error    { return s.rec("add " + p.Name) }
func (s *recordingStore) Update(p *corev1.Pod) error { return s.rec("update " + p.Name) }
func (s *recordingStore) Delete(p *corev1.Pod) error { return s.rec("delete " + p.Name) }
func (s *recordingStore) Resync() error              { return s.rec("resync") }
func (s *recordingStore) Replace(l []*corev1.Pod) error {
	n := []string{}
	for _, p := range l {
		n = append(n, p.Name)
	}
	slices.Sort(n)
	return s.rec(fmt.Sprint("replace ", n))
}
func (s *recordingStore) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.ops
	s.ops = nil
	return out
}

type reflectorEnv struct {
	src    *cachetest.Source[*corev1.Pod]
	store  *recordingStore
	r      *cache.Reflector[*corev1.Pod]
	cancel func()
	errs   *[]error
}

// startReflector runs a Reflector in the current synctest bubble; it stops
// at the end of the test.
func startReflector(t *testing.T, src *cachetest.Source[*corev1.Pod], lw cache.ListerWatcher[*corev1.Pod], edit func(*cache.ReflectorConfig[*corev1.Pod])) *reflectorEnv {
	t.Helper()
	if lw == nil {
		lw = src
	}
	env := &reflectorEnv{src: src, store: &recordingStore{}, errs: new([]error)}
	var mu sync.Mutex
	cfg := cache.ReflectorConfig[*corev1.Pod]{
		ListerWatcher: lw, Store: env.store, PageSize: 3,
		WatchErrorHandler: func(_ context.Context, err error) {
			mu.Lock()
			defer mu.Unlock()
			*env.errs = append(*env.errs, err)
		},
	}
	if edit != nil {
		edit(&cfg)
	}
	r, err := cache.NewReflector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	env.r = r
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	env.cancel = func() { cancel(); <-done }
	t.Cleanup(env.cancel)
	return env
}

func create(t *testing.T, src *cachetest.Source[*corev1.Pod], names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := src.Create(pod("ns", n, "")); err != nil {
			t.Fatal(err)
		}
	}
}

// settle lets the bubble's virtual time run past any backoff, then waits
// for every goroutine to block.
func settle() {
	time.Sleep(time.Minute)
	synctest.Wait()
}

func checkOps(t *testing.T, env *reflectorEnv, want ...string) {
	t.Helper()
	settle()
	if d := cmp.Diff(want, env.store.take()); d != "" {
		t.Errorf("store ops -want +got:\n%s", d)
	}
}

func checkCounts(t *testing.T, src *cachetest.Source[*corev1.Pod], lists, watches, watchLists int) {
	t.Helper()
	l, w, wl := src.Counts()
	if l != lists || w != watches || wl != watchLists {
		t.Errorf("lists, watches, watch-lists = %d, %d, %d; want %d, %d, %d", l, w, wl, lists, watches, watchLists)
	}
}

func noWatchList(c *cache.ReflectorConfig[*corev1.Pod]) { c.DisableWatchList = true }

func TestReflectorPaginatedListThenWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := cachetest.New[*corev1.Pod](cachetest.Config{})
		create(t, src, "a", "b", "c", "d", "e", "f", "g")
		env := startReflector(t, src, nil, noWatchList)
		checkOps(t, env, "replace [a b c d e f g]")
		checkCounts(t, src, 3, 1, 0) // 7 objects in pages of 3
		if got, want := env.r.LastSyncResourceVersion(), src.ResourceVersion(); got != want {
			t.Errorf("LastSyncResourceVersion = %s, want %s", got, want)
		}
		create(t, src, "h")
		_, _ = src.Update(pod("ns", "a", ""))
		_, _ = src.Delete("ns/b")
		checkOps(t, env, "add h", "update a", "delete b")
		if got, want := env.r.LastSyncResourceVersion(), src.ResourceVersion(); got != want {
			t.Errorf("LastSyncResourceVersion = %s, want %s", got, want)
		}
	})
}

func TestReflectorResumesDroppedWatchWithoutRelist(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := cachetest.New[*corev1.Pod](cachetest.Config{})
		create(t, src, "a")
		env := startReflector(t, src, nil, noWatchList)
		checkOps(t, env, "replace [a]")
		create(t, src, "b")
		checkOps(t, env, "add b")
		src.DropWatches()
		create(t, src, "c") // happens while no watch is open
		checkOps(t, env, "add c")
		checkCounts(t, src, 1, 2, 0)
	})
}

func TestReflectorBookmarkAdvancesResourceVersion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := cachetest.New[*corev1.Pod](cachetest.Config{})
		env := startReflector(t, src, nil, func(c *cache.ReflectorConfig[*corev1.Pod]) {
			c.DisableWatchList = true
			c.TweakListOptions = func(o *metav1.ListOptions) { o.LabelSelector = "app=mine" }
		})
		checkOps(t, env, "replace []")
		// Changes the reflector does not see advance the source only.
		_, _ = src.Create(pod("ns", "other", ""))
		_, _ = src.Create(pod("ns", "other2", ""))
		src.Bookmark()
		synctest.Wait()
		if got, want := env.r.LastSyncResourceVersion(), src.ResourceVersion(); got != want {
			t.Fatalf("after bookmark LastSyncResourceVersion = %s, want %s", got, want)
		}
		// Compacting up to now and dropping the watch does not force a
		// relist: the bookmark's resourceVersion is still valid.
		src.Compact()
		src.DropWatches()
		_, _ = src.Create(pod("ns", "mine", "", "app", "mine"))
		checkOps(t, env, "add mine")
		checkCounts(t, src, 1, 2, 0)
	})
}

func TestReflectorRelistsWhenWatchReturns410(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := cachetest.New[*corev1.Pod](cachetest.Config{})
		create(t, src, "a", "b")
		env := startReflector(t, src, nil, noWatchList)
		checkOps(t, env, "replace [a b]")
		src.DropWatches()
		create(t, src, "c")
		_, _ = src.Delete("ns/a")
		src.Compact() // the reflector's resourceVersion is now too old
		checkOps(t, env, "replace [b c]")
		checkCounts(t, src, 2, 3, 0)
		if n := len(*env.errs); n == 0 || !cache.IsExpired((*env.errs)[n-1]) {
			t.Errorf("errors = %v, want a 410 last", *env.errs)
		}
	})
}

func TestReflectorRelistsOnExpiredEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := cachetest.New[*corev1.Pod](cachetest.Config{})
		create(t, src, "a")
		env := startReflector(t, src, nil, noWatchList)
		checkOps(t, env, "replace [a]")
		create(t, src, "b")
		checkOps(t, env, "add b")
		src.ExpireWatches()
		checkOps(t, env, "replace [a b]")
		checkCounts(t, src, 2, 2, 0)
	})
}

func TestReflectorWatchList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := cachetest.New[*corev1.Pod](cachetest.Config{})
		create(t, src, "a", "b", "c", "d")
		env := startReflector(t, src, nil, nil)
		checkOps(t, env, "replace [a b c d]")
		checkCounts(t, src, 0, 0, 1)
		if got, want := env.r.LastSyncResourceVersion(), src.ResourceVersion(); got != want {
			t.Errorf("LastSyncResourceVersion = %s, want %s", got, want)
		}
		create(t, src, "e")
		checkOps(t, env, "add e")
		// After an expiry it streams again.
		src.ExpireWatches()
		checkOps(t, env, "replace [a b c d e]")
		checkCounts(t, src, 0, 0, 2)
	})
}

func TestReflectorWatchListFallsBackWhenRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := cachetest.New[*corev1.Pod](cachetest.Config{RefuseWatchList: true})
		create(t, src, "a")
		env := startReflector(t, src, nil, nil)
		checkOps(t, env, "replace [a]")
		checkCounts(t, src, 1, 1, 0)
		src.ExpireWatches()
		// It remembers the refusal and lists straight away.
		checkOps(t, env, "replace [a]")
		checkCounts(t, src, 2, 2, 0)
	})
}

// earlyEnd ends every watch-list before its initial-events-end bookmark.
type earlyEnd struct {
	*cachetest.Source[*corev1.Pod]
}

func (e earlyEnd) Watch(ctx context.Context, opts metav1.ListOptions) (cache.Watch[*corev1.Pod], error) {
	w, err := e.Source.Watch(ctx, opts)
	if err != nil || opts.SendInitialEvents == nil {
		return w, err
	}
	out := &chanWatch{ch: make(chan cache.Event[*corev1.Pod])}
	go func() {
		defer close(out.ch)
		defer w.Stop()
		for ev := range w.ResultChan() {
			if ev.Type == watch.Bookmark {
				return
			}
			out.ch <- ev
		}
	}()
	return out, nil
}

type chanWatch struct {
	ch   chan cache.Event[*corev1.Pod]
	once sync.Once
}

func (c *chanWatch) ResultChan() <-chan cache.Event[*corev1.Pod] { return c.ch }
func (c *chanWatch) Stop() {
	c.once.Do(func() {
		for range c.ch { // drain so the forwarder exits
		}
	})
}

func TestReflectorWatchListFallsBackWhenStreamEndsEarly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := cachetest.New[*corev1.Pod](cachetest.Config{})
		create(t, src, "a", "b")
		env := startReflector(t, src, earlyEnd{src}, nil)
		checkOps(t, env, "replace [a b]")
		checkCounts(t, src, 1, 1, 1)
	})
}

// failingLW fails every call and counts them.
type failingLW struct {
	mu    sync.Mutex
	calls int
}

func (f *failingLW) List(context.Context, metav1.ListOptions) (*cache.List[*corev1.Pod], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return nil, errors.New("connection refused")
}
func (f *failingLW) Watch(context.Context, metav1.ListOptions) (cache.Watch[*corev1.Pod], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return nil, errors.New("connection refused")
}
func (f *failingLW) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func TestReflectorBacksOffExponentiallyWithCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := &failingLW{}
		clk := testingclock.NewFakeClock(time.Unix(0, 0))
		startReflector(t, nil, lw, func(c *cache.ReflectorConfig[*corev1.Pod]) {
			c.DisableWatchList = true
			c.Clock = clk
			c.InitialBackoff = time.Second
			c.MaxBackoff = 4 * time.Second
			c.Rand = func() float64 { return 0 } // waits are d/2
		})
		synctest.Wait()
		if got := lw.count(); got != 1 {
			t.Fatalf("calls before any wait = %d", got)
		}
		for i, wait := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second} {
			clk.Step(wait - time.Millisecond)
			synctest.Wait()
			if got := lw.count(); got != i+1 {
				t.Fatalf("retry %d came before %v", i+1, wait)
			}
			clk.Step(time.Millisecond)
			synctest.Wait()
			if got := lw.count(); got != i+2 {
				t.Fatalf("retry %d did not come after %v (calls %d)", i+1, wait, got)
			}
		}
	})
}

func TestReflectorResync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := cachetest.New[*corev1.Pod](cachetest.Config{})
		clk := testingclock.NewFakeClock(time.Unix(0, 0))
		env := startReflector(t, src, nil, func(c *cache.ReflectorConfig[*corev1.Pod]) {
			c.Clock = clk
			c.ResyncPeriod = time.Minute
		})
		checkOps(t, env, "replace []")
		clk.Step(time.Minute)
		checkOps(t, env, "resync")
	})
}

func TestNewReflectorValidates(t *testing.T) {
	src := cachetest.New[*corev1.Pod](cachetest.Config{})
	for _, cfg := range []cache.ReflectorConfig[*corev1.Pod]{
		{Store: &recordingStore{}},
		{ListerWatcher: src},
		{ListerWatcher: src, Store: &recordingStore{}, PageSize: -1},
	} {
		if _, err := cache.NewReflector(cfg); err == nil {
			t.Errorf("NewReflector(%+v): no error", cfg)
		}
	}
}
