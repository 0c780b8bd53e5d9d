// Package dynamic measures kplane's unstructured informer (its dynamic
// client and informers.ForDynamic) side by side with client-go's dynamic
// informer, both reading custom resources over HTTP from the same
// scripted server: the client's decoding and the informer's work are what
// is measured, not an API server's.
package dynamic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"

	kcache "github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/informers"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// widget is a custom resource of realistic size (~1.3 KB of JSON: labels,
// annotations, an owner, a nested spec, status conditions).
func widget(i, rv int) map[string]any {
	return map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{
			"name": fmt.Sprintf("widget-%06d", i), "namespace": fmt.Sprintf("ns-%d", i%10),
			"uid":             fmt.Sprintf("00000000-0000-0000-0000-%012d", i),
			"resourceVersion": fmt.Sprint(rv), "generation": 3, "creationTimestamp": "2026-12-01T10:00:00Z",
			"labels":      map[string]any{"app": "shop", "tier": "backend", "team": "payments"},
			"annotations": map[string]any{"example.com/owner": "payments@example.com", "example.com/revision": "42"},
			"ownerReferences": []any{map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "shop",
				"uid": "11111111-1111-1111-1111-111111111111", "controller": true, "blockOwnerDeletion": true}},
			"finalizers": []any{"example.com/cleanup"},
		},
		"spec": map[string]any{
			"size": int64(3), "image": "registry.example.com/shop:1.2.3", "paused": false,
			"ports":     []any{map[string]any{"name": "http", "port": int64(8080)}, map[string]any{"name": "metrics", "port": int64(9090)}},
			"resources": map[string]any{"cpu": "250m", "memory": "256Mi"},
			"schedule":  map[string]any{"window": "02:00-04:00", "timeZone": "Europe/Berlin"},
		},
		"status": map[string]any{
			"observedGeneration": int64(3), "readyReplicas": int64(3), "phase": "Ready",
			"conditions": []any{
				map[string]any{"type": "Ready", "status": "True", "reason": "AllReplicasReady", "message": "3 of 3 replicas are ready", "lastTransitionTime": "2026-12-01T10:01:00Z"},
				map[string]any{"type": "Progressing", "status": "False", "reason": "Complete", "lastTransitionTime": "2026-12-01T10:01:00Z"},
			},
		},
	}
}

// script is a server that answers the list of widgets with n objects and
// a watch with updates, written out only once released; watch-list
// requests are refused, so both clients list then watch.
type script struct {
	list    []byte
	events  []byte // the watch stream: one MODIFIED event per line
	release chan struct{}
	hs      *httptest.Server
}

func newScript(tb testing.TB, n, updates int) *script {
	tb.Helper()
	items := make([]any, n)
	for i := range items {
		items[i] = widget(i, 10+i)
	}
	list, err := json.Marshal(map[string]any{"apiVersion": "example.com/v1", "kind": "WidgetList",
		"metadata": map[string]any{"resourceVersion": fmt.Sprint(10 + n)}, "items": items})
	if err != nil {
		tb.Fatal(err)
	}
	var events bytes.Buffer
	enc := json.NewEncoder(&events)
	for k := range updates {
		if err := enc.Encode(map[string]any{"type": "MODIFIED", "object": widget(k%n, 10+n+1+k)}); err != nil {
			tb.Fatal(err)
		}
	}
	s := &script{list: list, events: events.Bytes(), release: make(chan struct{})}
	s.hs = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

func (s *script) serve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path != "/apis/example.com/v1/widgets":
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
	case q.Get("watch") != "true":
		_, _ = w.Write(s.list)
	case q.Get("sendInitialEvents") == "true":
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"BadRequest","message":"watch-list not served","code":400}`))
	default:
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-s.release:
		case <-r.Context().Done():
			return
		}
		_, _ = w.Write(s.events)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
}

func (s *script) close() {
	s.hs.CloseClientConnections()
	s.hs.Close()
}

// subject is one informer under test, started and synced.
type subject struct {
	updates atomic.Int64
	target  int64
	done    chan struct{}
	stop    func()
}

func (s *subject) count() {
	if s.updates.Add(1) == s.target {
		close(s.done)
	}
}

func startKplane(tb testing.TB, url string, target int64) *subject {
	tb.Helper()
	s := &subject{target: target, done: make(chan struct{})}
	c, err := client.New(client.Config{Host: url})
	if err != nil {
		tb.Fatal(err)
	}
	f, err := informers.New(informers.Config{Client: c, Logger: quiet})
	if err != nil {
		tb.Fatal(err)
	}
	inf, err := informers.ForDynamic(f, widgets)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := inf.AddEventHandler(kcache.HandlerFuncs[*unstructured.Unstructured]{
		UpdateFunc: func(_, _ *unstructured.Unstructured) { s.count() },
	}, kcache.HandlerOptions{}); err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.Start(ctx)
	if !kcache.WaitForCacheSync(ctx, inf.HasSynced) {
		tb.Fatal("kplane informer did not sync")
	}
	s.stop = func() { cancel(); f.Shutdown(); c.CloseIdleConnections() }
	return s
}

func startClientGo(tb testing.TB, url string, target int64) *subject {
	tb.Helper()
	s := &subject{target: target, done: make(chan struct{})}
	dc, err := dynamic.NewForConfig(&rest.Config{Host: url, QPS: -1})
	if err != nil {
		tb.Fatal(err)
	}
	f := dynamicinformer.NewDynamicSharedInformerFactory(dc, 0)
	inf := f.ForResource(widgets).Informer()
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, _ any) { s.count() },
	}); err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.Start(ctx.Done())
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		tb.Fatal("client-go informer did not sync")
	}
	s.stop = func() { cancel(); f.Shutdown() }
	return s
}

var impls = []struct {
	name  string
	start func(tb testing.TB, url string, target int64) *subject
}{
	{"kplane", startKplane},
	{"client-go", startClientGo},
}

// cachedWidgets is the size of the cache while events flow.
const cachedWidgets = 1000

// BenchmarkDynamicInformerEvents measures update events per second from
// the wire through each unstructured informer to a handler: decoding the
// watch stream into unstructured objects, the informer's queue, cache and
// handler dispatch, with 1,000 custom resources cached.
func BenchmarkDynamicInformerEvents(b *testing.B) {
	for _, impl := range impls {
		b.Run("impl="+impl.name, func(b *testing.B) { benchEvents(b, impl.start) })
	}
}

func benchEvents(b *testing.B, start func(testing.TB, string, int64) *subject) {
	sc := newScript(b, cachedWidgets, b.N)
	defer sc.close()
	s := start(b, sc.hs.URL, int64(b.N))
	defer s.stop()
	b.ResetTimer()
	t0 := time.Now()
	close(sc.release)
	select {
	case <-s.done:
	case <-time.After(5 * time.Minute):
		b.Fatalf("%d of %d updates arrived", s.updates.Load(), b.N)
	}
	elapsed := time.Since(t0)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
}

// memoryWidgets is the number of cached custom resources for the memory
// benchmark.
const memoryWidgets = 50_000

// BenchmarkDynamicInformerMemory measures the heap an unstructured
// informer holds per cached custom resource after its initial list of
// 50,000: the decoded objects and every structure the informer keeps.
func BenchmarkDynamicInformerMemory(b *testing.B) {
	for _, impl := range impls {
		b.Run("impl="+impl.name, func(b *testing.B) {
			b.ReportMetric(heapPerWidget(b, impl.start), "bytes/object")
		})
	}
}

func heapPerWidget(tb testing.TB, start func(testing.TB, string, int64) *subject) float64 {
	sc := newScript(tb, memoryWidgets, 0)
	defer sc.close()
	before := liveHeap()
	s := start(tb, sc.hs.URL, -1)
	after := liveHeap()
	s.stop()
	runtime.KeepAlive(sc)
	return (float64(after) - float64(before)) / memoryWidgets
}

func liveHeap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestReport runs both benchmarks five times, interleaved, and prints the
// medians side by side with the ratios. It is skipped unless
// KPLANE_BENCH_REPORT=1.
func TestReport(t *testing.T) {
	if os.Getenv("KPLANE_BENCH_REPORT") != "1" {
		t.Skip("set KPLANE_BENCH_REPORT=1 to run")
	}
	runs := map[string][]float64{}
	mems := map[string][]float64{}
	for range 5 {
		for _, impl := range impls {
			r := testing.Benchmark(func(b *testing.B) { benchEvents(b, impl.start) })
			runs[impl.name] = append(runs[impl.name], r.Extra["events/s"])
			mems[impl.name] = append(mems[impl.name], heapPerWidget(t, impl.start))
		}
	}
	median := func(v []float64) float64 { v = slices.Clone(v); slices.Sort(v); return v[len(v)/2] }
	for _, impl := range impls {
		t.Logf("%s: events/s runs %.0f; bytes/object runs %.0f", impl.name, runs[impl.name], mems[impl.name])
	}
	k, c := median(runs["kplane"]), median(runs["client-go"])
	t.Logf("events/s from the wire to the handler (%d cached): kplane %.0f, client-go %.0f, ratio %.2fx", cachedWidgets, k, c, k/c)
	km, cm := median(mems["kplane"]), median(mems["client-go"])
	t.Logf("heap per cached custom resource (%d): kplane %.0f B, client-go %.0f B, ratio %.2f", memoryWidgets, km, cm, km/cm)
}

// A run of each benchmark at a small size, in the suite, so the harness
// itself cannot rot: both sides sync and see every update.
func TestHarness(t *testing.T) {
	for _, impl := range impls {
		t.Run(impl.name, func(t *testing.T) {
			sc := newScript(t, 50, 200)
			defer sc.close()
			s := impl.start(t, sc.hs.URL, 200)
			defer s.stop()
			close(sc.release)
			select {
			case <-s.done:
			case <-time.After(time.Minute):
				t.Fatalf("%d of 200 updates arrived", s.updates.Load())
			}
		})
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
