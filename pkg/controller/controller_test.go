package controller

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// newTestController builds a Controller over a fakeQueue. Fields of cfg
// that are unset get test defaults.
func newTestController(t testing.TB, cfg Config) (*Controller, *fakeQueue) {
	t.Helper()
	q := newFakeQueue()
	if cfg.Name == "" {
		cfg.Name = "test"
	}
	if cfg.Queue == nil {
		cfg.Queue = q
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.ShutDown)
	return c, q
}

// drain runs processNextWorkItem on the calling goroutine until the queue
// is empty, so retries (which the fake queue adds at once) are followed to
// the end.
func drain(t testing.TB, c *Controller, q *fakeQueue) {
	t.Helper()
	for i := 0; q.Len() > 0; i++ {
		if i > 1000 {
			t.Fatal("queue never drained")
		}
		if !c.processNextWorkItem(t.Context()) {
			t.Fatal("worker asked to exit")
		}
	}
}

func TestHandleErr(t *testing.T) {
	errBoom := errors.New("boom")
	// failing returns a handler that fails its first n calls with err.
	failing := func(n int, err error) func(*atomic.Int32) SyncHandler {
		return func(calls *atomic.Int32) SyncHandler {
			return func(context.Context, string) error {
				if int(calls.Add(1)) <= n {
					return err
				}
				return nil
			}
		}
	}
	retries := func(n int) []string {
		var a []string
		for range n {
			a = append(a, "get k", "addRateLimited k", "done k")
		}
		return a
	}
	tests := []struct {
		name        string
		maxRetries  int
		handler     func(*atomic.Int32) SyncHandler
		wantCalls   int
		wantActions []string
		wantResults map[string]int
		wantDropped int
		wantTerm    int
	}{
		{
			name: "success is forgotten", handler: failing(0, nil), wantCalls: 1,
			wantActions: []string{"get k", "forget k", "done k"},
			wantResults: map[string]int{ResultSuccess: 1},
		},
		{
			name: "error then success", handler: failing(2, errBoom), wantCalls: 3,
			wantActions: append(retries(2), "get k", "forget k", "done k"),
			wantResults: map[string]int{ResultError: 2, ResultSuccess: 1},
		},
		{
			name: "dropped after max retries", maxRetries: 3, handler: failing(100, errBoom), wantCalls: 4,
			wantActions: append(retries(3), "get k", "forget k", "done k"),
			wantResults: map[string]int{ResultError: 4}, wantDropped: 1,
		},
		{
			name: "default max retries is 15", handler: failing(100, errBoom), wantCalls: 16,
			wantActions: append(retries(15), "get k", "forget k", "done k"),
			wantResults: map[string]int{ResultError: 16}, wantDropped: 1,
		},
		{
			name: "success on the last retry is not dropped", maxRetries: 3, handler: failing(3, errBoom), wantCalls: 4,
			wantActions: append(retries(3), "get k", "forget k", "done k"),
			wantResults: map[string]int{ResultError: 3, ResultSuccess: 1},
		},
		{
			name: "terminal error is not retried", handler: failing(100, Terminal(errBoom)), wantCalls: 1,
			wantActions: []string{"get k", "forget k", "done k"},
			wantResults: map[string]int{ResultError: 1}, wantTerm: 1,
		},
		{
			name: "wrapped terminal error is not retried", handler: failing(100, fmt.Errorf("sync: %w", Terminal(errBoom))), wantCalls: 1,
			wantActions: []string{"get k", "forget k", "done k"},
			wantResults: map[string]int{ResultError: 1}, wantTerm: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			m := newFakeMetrics()
			c, q := newTestController(t, Config{MaxRetries: tt.maxRetries, SyncHandler: tt.handler(&calls), Metrics: m})
			c.EnqueueKey("k")
			q.reset()
			drain(t, c, q)
			if int(calls.Load()) != tt.wantCalls {
				t.Errorf("handler calls = %d, want %d", calls.Load(), tt.wantCalls)
			}
			if diff := cmp.Diff(tt.wantActions, q.recorded()); diff != "" {
				t.Errorf("queue actions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantResults, m.results); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
			if m.dropped != tt.wantDropped || m.terminal != tt.wantTerm {
				t.Errorf("dropped, terminal = %d, %d, want %d, %d", m.dropped, m.terminal, tt.wantDropped, tt.wantTerm)
			}
			if q.NumRequeues("k") != 0 {
				t.Errorf("key not forgotten: %d requeues", q.NumRequeues("k"))
			}
		})
	}
}

func TestPanicRecovered(t *testing.T) {
	var buf bytes.Buffer
	m := newFakeMetrics()
	var calls atomic.Int32
	c, q := newTestController(t, Config{
		Logger:  slog.New(slog.NewTextHandler(&buf, nil)),
		Metrics: m,
		SyncHandler: func(_ context.Context, key string) error {
			if calls.Add(1) == 1 && key == "ns/bad" {
				panic("nil map")
			}
			return nil
		},
	})
	c.EnqueueKey("ns/bad")
	c.EnqueueKey("ns/good")
	drain(t, c, q)
	want := []string{
		"add ns/bad", "add ns/good",
		"get ns/bad", "addRateLimited ns/bad", "done ns/bad",
		"get ns/good", "forget ns/good", "done ns/good",
		"get ns/bad", "forget ns/bad", "done ns/bad",
	}
	if diff := cmp.Diff(want, q.recorded()); diff != "" {
		t.Errorf("queue actions (-want +got):\n%s", diff)
	}
	if m.panics != 1 || m.results[ResultError] != 1 || m.results[ResultSuccess] != 2 {
		t.Errorf("metrics: panics %d results %v", m.panics, m.results)
	}
	if m.active != 0 {
		t.Errorf("active workers after panic = %d, want 0", m.active)
	}
	out := buf.String()
	for _, s := range []string{"sync handler panicked", "key=ns/bad", "panic=\"nil map\"", "controller=test", "goroutine"} {
		if !strings.Contains(out, s) {
			t.Errorf("log lacks %q:\n%s", s, out)
		}
	}
}

func TestHandlerContextLogger(t *testing.T) {
	var buf bytes.Buffer
	c, q := newTestController(t, Config{
		Name:   "mirror",
		Logger: slog.New(slog.NewTextHandler(&buf, nil)),
		SyncHandler: func(ctx context.Context, key string) error {
			LoggerFrom(ctx).Info("syncing")
			return nil
		},
	})
	c.EnqueueKey("ns/a")
	drain(t, c, q)
	if !strings.Contains(buf.String(), "msg=syncing controller=mirror key=ns/a") {
		t.Fatalf("handler log lacks controller and key:\n%s", buf.String())
	}
	if LoggerFrom(context.Background()) == nil {
		t.Fatal("LoggerFrom without a logger returned nil")
	}
}

func TestReconcileDurationOnInjectedClock(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	m := newFakeMetrics()
	c, q := newTestController(t, Config{Clock: clk, Metrics: m, SyncHandler: func(context.Context, string) error {
		clk.Step(1500 * time.Millisecond)
		return nil
	}})
	c.EnqueueKey("k")
	drain(t, c, q)
	if diff := cmp.Diff([]time.Duration{1500 * time.Millisecond}, m.durations); diff != "" {
		t.Fatalf("durations (-want +got):\n%s", diff)
	}
	if m.activeCalls != 2 || m.maxActive != 1 {
		t.Fatalf("active worker updates = %d, max = %d; want 2, 1", m.activeCalls, m.maxActive)
	}
}

func TestRunWaitsForCachesAndShutsDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var synced atomic.Bool
		var polls atomic.Int32
		var handled sync.Map
		m := newFakeMetrics()
		c, q := newTestController(t, Config{
			Metrics: m,
			CacheSyncs: map[string]InformerSynced{
				"configmaps": func() bool { return true },
				"secrets":    func() bool { polls.Add(1); return synced.Load() },
			},
			SyncHandler: func(_ context.Context, key string) error { handled.Store(key, true); return nil },
		})
		c.EnqueueKey("ns/a")
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx, 2) }()

		// The caches have not synced: nothing runs, however long we wait.
		time.Sleep(time.Minute)
		synctest.Wait()
		if _, ok := handled.Load("ns/a"); ok {
			t.Fatal("handler ran before the caches synced")
		}
		if n := polls.Load(); n < 100 {
			t.Fatalf("caches polled %d times in a minute, want about 600", n)
		}
		synced.Store(true)
		time.Sleep(DefaultCacheSyncPollInterval)
		synctest.Wait()
		if _, ok := handled.Load("ns/a"); !ok {
			t.Fatal("handler did not run after the caches synced")
		}
		if m.maxWorkers != 2 {
			t.Fatalf("max workers metric = %d, want 2", m.maxWorkers)
		}

		cancel()
		synctest.Wait()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Run = %v", err)
			}
		default:
			t.Fatal("Run did not return after cancel")
		}
		// The queue is shut down: later adds are ignored.
		c.EnqueueKey("ns/late")
		if q.Len() != 0 {
			t.Fatal("queue accepts adds after Run returned")
		}
		if err := c.Run(t.Context(), 1); err == nil {
			t.Fatal("second Run accepted")
		}
	})
}

func TestRunReturnsIfCachesNeverSync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		var logs bytes.Buffer
		c, q := newTestController(t, Config{
			Logger:      slog.New(slog.NewTextHandler(&logs, nil)),
			CacheSyncs:  map[string]InformerSynced{"pods": func() bool { return false }, "nodes": func() bool { return true }},
			SyncHandler: func(context.Context, string) error { calls.Add(1); return nil },
		})
		c.EnqueueKey("k")
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		err := c.Run(ctx, 3)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Run = %v, want deadline exceeded", err)
		}
		if calls.Load() != 0 {
			t.Fatal("handler ran although the caches never synced")
		}
		if got := q.recorded(); got[len(got)-1] != "shutdown" {
			t.Fatalf("queue not shut down: %v", got)
		}
		if !strings.Contains(logs.String(), "unsynced=[pods]") {
			t.Fatalf("log does not name the unsynced cache:\n%s", logs.String())
		}
	})
}

func TestRunWaitsForWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const workers = 3
		release := make(chan struct{})
		var running atomic.Int32
		var sawCancel atomic.Int32
		var calls atomic.Int32
		c, _ := newTestController(t, Config{SyncHandler: func(ctx context.Context, key string) error {
			calls.Add(1)
			running.Add(1)
			defer running.Add(-1)
			<-release
			if ctx.Err() != nil {
				sawCancel.Add(1)
			}
			return nil
		}})
		for i := range workers + 2 {
			c.EnqueueKey(fmt.Sprintf("ns/%d", i))
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx, workers) }()
		synctest.Wait()
		if n := running.Load(); n != workers {
			t.Fatalf("%d handlers running at once, want %d", n, workers)
		}

		cancel()
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("Run returned while handlers were still running")
		default:
		}
		close(release)
		synctest.Wait()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Run = %v", err)
			}
		default:
			t.Fatal("Run did not return after the handlers finished")
		}
		// The two keys still queued at cancel are not started with a dead context.
		if n := calls.Load(); n != workers {
			t.Fatalf("handler called %d times, want %d", n, workers)
		}
		if n := sawCancel.Load(); n != workers {
			t.Fatalf("%d handlers saw the cancelled context, want %d", n, workers)
		}
	})
}

// TestRunPanicKeepsWorker: one worker, a handler that panics once; the
// worker survives and handles the next key.
func TestRunPanicKeepsWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var handled sync.Map
		c, _ := newTestController(t, Config{SyncHandler: func(_ context.Context, key string) error {
			if key == "ns/panic" {
				panic(errors.New("kaboom"))
			}
			handled.Store(key, true)
			return nil
		}, MaxRetries: 1})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx, 1) }()
		c.EnqueueKey("ns/panic")
		c.EnqueueKey("ns/after")
		synctest.Wait()
		if _, ok := handled.Load("ns/after"); !ok {
			t.Fatal("worker did not survive the panic")
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

func TestRunRejectsBadWorkers(t *testing.T) {
	c, _ := newTestController(t, Config{SyncHandler: func(context.Context, string) error { return nil }})
	if err := c.Run(t.Context(), 0); err == nil {
		t.Fatal("0 workers accepted")
	}
}

func TestNewValidates(t *testing.T) {
	h := func(context.Context, string) error { return nil }
	for name, cfg := range map[string]Config{
		"no name":       {Queue: newFakeQueue(), SyncHandler: h},
		"no queue":      {Name: "x", SyncHandler: h},
		"no handler":    {Name: "x", Queue: newFakeQueue()},
		"negative":      {Name: "x", Queue: newFakeQueue(), SyncHandler: h, MaxRetries: -1},
		"negative poll": {Name: "x", Queue: newFakeQueue(), SyncHandler: h, CacheSyncPollInterval: -1},
		"nil sync":      {Name: "x", Queue: newFakeQueue(), SyncHandler: h, CacheSyncs: map[string]InformerSynced{"pods": nil}},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestTerminal(t *testing.T) {
	if Terminal(nil) != nil {
		t.Fatal("Terminal(nil) != nil")
	}
	base := errors.New("bad spec")
	err := fmt.Errorf("outer: %w", Terminal(base))
	if !IsTerminal(err) || !errors.Is(err, base) {
		t.Fatalf("IsTerminal/Is lost through wrapping: %v", err)
	}
	if IsTerminal(base) {
		t.Fatal("plain error is terminal")
	}
}

func TestEnqueueHelpers(t *testing.T) {
	t.Parallel()
	tr := true
	fa := false
	ref := func(apiVersion, kind, name string, controller *bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: "u", Controller: controller}
	}
	podWith := func(ns string, refs ...metav1.OwnerReference) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p", OwnerReferences: refs}}
	}
	tests := []struct {
		name string
		obj  *corev1.Pod
		want []string
	}{
		{name: "controller of the kind", obj: podWith("ns", ref("apps/v1", "ReplicaSet", "rs", &tr)), want: []string{"add ns/rs"}},
		{name: "other version of the kind", obj: podWith("ns", ref("apps/v1beta2", "ReplicaSet", "rs", &tr)), want: []string{"add ns/rs"}},
		{name: "cluster-scoped", obj: podWith("", ref("apps/v1", "ReplicaSet", "rs", &tr)), want: []string{"add rs"}},
		{name: "other kind", obj: podWith("ns", ref("apps/v1", "Deployment", "d", &tr))},
		{name: "other group", obj: podWith("ns", ref("example.com/v1", "ReplicaSet", "rs", &tr))},
		{name: "owner that is not the controller", obj: podWith("ns", ref("apps/v1", "ReplicaSet", "rs", &fa))},
		{name: "no owner", obj: podWith("ns")},
		{name: "bad apiVersion", obj: podWith("ns", ref("a/b/c", "ReplicaSet", "rs", &tr))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, q := newTestController(t, Config{SyncHandler: func(context.Context, string) error { return nil }})
			c.EnqueueControllerOf(tt.obj, rsKind)
			if diff := cmp.Diff(tt.want, q.recorded()); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
		})
	}

	c, q := newTestController(t, Config{SyncHandler: func(context.Context, string) error { return nil }})
	c.Enqueue(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}})
	c.Enqueue(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1"}})
	c.Enqueue(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}}) // no name: skipped
	c.EnqueueAfter(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"}}, time.Minute)
	c.EnqueueKey("raw")
	c.EnqueueKeyAfter("ns/later", time.Hour)
	want := []string{"add ns/a", "add node1", "addAfter ns/b 1m0s", "add raw", "addAfter ns/later 1h0m0s"}
	if diff := cmp.Diff(want, q.recorded()); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
}

func TestPrometheusMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	pm, err := NewPrometheusMetrics(PrometheusMetricsConfig{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewPrometheusMetrics(PrometheusMetricsConfig{Registerer: reg}); err == nil {
		t.Fatal("second registration on the same registry accepted")
	}
	if _, err := NewPrometheusMetrics(PrometheusMetricsConfig{}); err == nil {
		t.Fatal("nil registerer accepted")
	}
	var calls atomic.Int32
	c, q := newTestController(t, Config{Name: "mirror", Metrics: pm, MaxRetries: 1, SyncHandler: func(_ context.Context, key string) error {
		switch {
		case key == "ns/panic" && calls.Add(1) == 1:
			panic("x")
		case key == "ns/terminal":
			return Terminal(errors.New("no"))
		case key == "ns/fail":
			return errors.New("again")
		}
		return nil
	}})
	for _, k := range []string{"ns/ok", "ns/panic", "ns/terminal", "ns/fail"} {
		c.EnqueueKey(k)
	}
	drain(t, c, q)
	// ok: success; panic: error then success; terminal: error; fail: error twice (dropped).
	for _, tc := range []struct {
		c    prometheus.Collector
		want float64
	}{
		{pm.total.WithLabelValues("mirror", ResultSuccess), 2},
		{pm.total.WithLabelValues("mirror", ResultError), 4},
		{pm.errors.WithLabelValues("mirror"), 4},
		{pm.panics.WithLabelValues("mirror"), 1},
		{pm.terminal.WithLabelValues("mirror"), 1},
		{pm.dropped.WithLabelValues("mirror"), 1},
		{pm.active.WithLabelValues("mirror"), 0},
	} {
		if got := testutil.ToFloat64(tc.c); got != tc.want {
			desc := make(chan *prometheus.Desc, 1)
			tc.c.Describe(desc)
			t.Errorf("%v = %v, want %v", <-desc, got, tc.want)
		}
	}
	if n := testutil.CollectAndCount(pm.duration); n != 1 {
		t.Errorf("duration series = %d, want 1", n)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var samples uint64
	for _, mf := range mfs {
		if mf.GetName() == "controller_runtime_reconcile_time_seconds" {
			samples = mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	if samples != 6 {
		t.Errorf("reconcile_time samples = %d, want 6", samples)
	}
}
