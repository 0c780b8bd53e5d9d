package cache

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	listersv1 "k8s.io/client-go/listers/core/v1"
	toolscache "k8s.io/client-go/tools/cache"

	kcache "github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/cache/cachetest"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// throughputPods is the size of the cache while events flow.
const throughputPods = 1000

// newSource returns a source holding n pods spread over 10 namespaces.
func newSource(tb testing.TB, n int) (*cachetest.Source[*corev1.Pod], []*corev1.Pod) {
	tb.Helper()
	src := cachetest.New[*corev1.Pod](cachetest.Config{WatchBuffer: 1 << 30})
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		p, err := src.Create(Pod(fmt.Sprint("ns-", i%10), i))
		if err != nil {
			tb.Fatal(err)
		}
		pods[i] = p
	}
	return src, pods
}

// subject is one informer under test: started, synced, counting events.
type subject struct {
	events atomic.Int64
	target atomic.Int64  // events to wait for
	done   chan struct{} // closed when events reaches target
	list   func() int    // one List of everything through the lister
	stop   func()
}

func (s *subject) count() {
	if s.events.Add(1) == s.target.Load() {
		close(s.done)
	}
}

func startKplane(tb testing.TB, src *cachetest.Source[*corev1.Pod]) *subject {
	tb.Helper()
	s := &subject{}
	inf, err := kcache.NewSharedIndexInformer(kcache.InformerConfig[*corev1.Pod]{ListerWatcher: KplaneLW{src}, Logger: quiet})
	if err != nil {
		tb.Fatal(err)
	}
	_, err = inf.AddEventHandler(kcache.HandlerFuncs[*corev1.Pod]{
		UpdateFunc: func(_, _ *corev1.Pod) { s.count() },
	}, kcache.HandlerOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { inf.Run(ctx) })
	if !kcache.WaitForCacheSync(ctx, inf.HasSynced) {
		tb.Fatal("kplane informer did not sync")
	}
	lister := inf.Lister()
	s.list = func() int {
		l, _ := lister.List(labels.Everything())
		return len(l)
	}
	s.stop = func() { cancel(); wg.Wait() }
	return s
}

func startClientGo(tb testing.TB, src *cachetest.Source[*corev1.Pod]) *subject {
	tb.Helper()
	s := &subject{}
	inf := toolscache.NewSharedIndexInformer(ClientGoLW(src), &corev1.Pod{}, 0,
		toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	_, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, _ any) { s.count() },
	})
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { inf.RunWithContext(ctx) })
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		tb.Fatal("client-go informer did not sync")
	}
	lister := listersv1.NewPodLister(inf.GetIndexer())
	s.list = func() int {
		l, _ := lister.List(labels.Everything())
		return len(l)
	}
	s.stop = func() { cancel(); wg.Wait() }
	return s
}

var impls = []struct {
	name  string
	start func(testing.TB, *cachetest.Source[*corev1.Pod]) *subject
}{
	{"kplane", startKplane},
	{"client-go", startClientGo},
}

// BenchmarkInformerEvents measures update events per second from the
// source through the informer to a handler, with 0 and 10 goroutines
// calling List on the lister in a loop meanwhile.
func BenchmarkInformerEvents(b *testing.B) {
	for _, impl := range impls {
		for _, readers := range []int{0, 10} {
			b.Run(fmt.Sprintf("impl=%s/readers=%d", impl.name, readers), func(b *testing.B) {
				benchEvents(b, impl.start, readers)
			})
		}
	}
}

func benchEvents(b *testing.B, start func(testing.TB, *cachetest.Source[*corev1.Pod]) *subject, readers int) {
	src, pods := newSource(b, throughputPods)
	s := start(b, src)
	defer s.stop()
	// Prepare the burst outside the timed part: the source holds the events
	// back until Release, so only the informer's work is measured.
	src.Hold()
	for i := range b.N {
		if _, err := src.Update(pods[i%len(pods)]); err != nil {
			b.Fatal(err)
		}
	}
	s.done = make(chan struct{})
	s.target.Store(int64(b.N))
	var stop atomic.Bool
	var wg sync.WaitGroup
	var lists atomic.Int64
	for range readers {
		wg.Go(func() {
			for !stop.Load() {
				if s.list() != throughputPods {
					b.Error("lister lost objects")
					return
				}
				lists.Add(1)
			}
		})
	}
	b.ResetTimer()
	startT, startCPU := time.Now(), cpuTime()
	src.Release()
	<-s.done
	elapsed, cpu := time.Since(startT), cpuTime()-startCPU
	b.StopTimer()
	stop.Store(true)
	wg.Wait()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
	if readers == 0 {
		// Process CPU time per event: less sensitive than wall time to
		// other load on a shared machine.
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/event")
	}
	if readers > 0 {
		b.ReportMetric(float64(lists.Load())/elapsed.Seconds(), "lists/s")
	}
}

// memoryPods is the number of cached pods for the memory benchmark.
const memoryPods = 100_000

// BenchmarkInformerMemory measures the heap an informer holds per cached
// pod, objects included (each side caches its own deep copies), after the
// initial sync of 100k pods.
func BenchmarkInformerMemory(b *testing.B) {
	for _, impl := range impls {
		b.Run("impl="+impl.name, func(b *testing.B) {
			// One measurement whatever b.N: it builds a 100k-pod cache.
			b.ReportMetric(heapPerPod(b, impl.start), "bytes/pod")
		})
	}
}

func heapPerPod(tb testing.TB, start func(testing.TB, *cachetest.Source[*corev1.Pod]) *subject) float64 {
	src, _ := newSource(tb, memoryPods)
	before := liveHeap()
	s := start(tb, src)
	after := liveHeap()
	if path := os.Getenv("KPLANE_HEAP_PROFILE"); path != "" {
		// Where the bytes are, for whoever wants to shrink them.
		if f, err := os.Create(path); err == nil {
			_ = pprof.WriteHeapProfile(f)
			_ = f.Close()
		}
	}
	runtime.KeepAlive(src)
	s.stop()
	return float64(after-before) / memoryPods
}

// cpuTime returns the CPU time (user and system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func liveHeap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestReport runs both benchmarks and prints them side by side with
// ratios. It is skipped unless KPLANE_BENCH_REPORT=1, as it takes a while;
// pass -test.benchtime=20000x (see README.md) to fix the number of events.
func TestReport(t *testing.T) {
	if os.Getenv("KPLANE_BENCH_REPORT") != "1" {
		t.Skip("set KPLANE_BENCH_REPORT=1 to run")
	}
	// Each configuration runs five times, interleaved, and reports its
	// median: the machine is shared and noisy.
	runs := map[string][]float64{}
	for range 5 {
		for _, impl := range impls {
			for _, readers := range []int{0, 10} {
				r := testing.Benchmark(func(b *testing.B) { benchEvents(b, impl.start, readers) })
				k := fmt.Sprint(impl.name, readers)
				runs[k] = append(runs[k], r.Extra["events/s"])
			}
		}
	}
	rate := map[string]float64{}
	for k, v := range runs {
		slices.Sort(v)
		rate[k] = v[len(v)/2]
		t.Logf("%s readers: runs %.0f", k, v)
	}
	mem := map[string]float64{}
	for _, impl := range impls {
		mem[impl.name] = heapPerPod(t, impl.start)
	}
	t.Logf("events/s through informer to handler (%d cached pods):", throughputPods)
	t.Logf("  %-10s %14s %14s %14s", "readers", "kplane", "client-go", "kplane/client-go")
	for _, readers := range []int{0, 10} {
		k, c := rate[fmt.Sprint("kplane", readers)], rate[fmt.Sprint("client-go", readers)]
		t.Logf("  %-10d %14.0f %14.0f %14.2fx", readers, k, c, k/c)
	}
	t.Logf("  kplane with 10 readers / without: %.2f; client-go: %.4f",
		rate["kplane10"]/rate["kplane0"], rate["client-go10"]/rate["client-go0"])
	t.Logf("heap per cached pod, %d pods, objects included: kplane %.0f B, client-go %.0f B, ratio %.2f",
		memoryPods, mem["kplane"], mem["client-go"], mem["kplane"]/mem["client-go"])
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
