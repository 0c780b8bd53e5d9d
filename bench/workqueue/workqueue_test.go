package workqueue

import (
	"cmp"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

var (
	table = flag.Bool("table", false, "run every workload on every queue and print the side-by-side table")
	reps  = flag.Int("reps", 5, "with -table: runs per cell; the table shows the median")
)

// Key sets: "unique" keys are spread so wide that an add practically never
// finds its key still queued; in the pipeline workload "duplicate" keys are
// 64 in all, so most adds find their key queued or in flight and are
// deduplicated.
var (
	uniqueKeys    = Keys(1 << 18)
	duplicateKeys = Keys(64)
	retryKeys     = Keys(1024)
)

type workload struct {
	name string
	g    int
	run  func(q Queue, n, g int, start func())
}

func workloads() []workload {
	var ws []workload
	gs := []int{1, 4, 16}
	for _, dup := range []bool{false, true} {
		name := "AddGetDone/unique"
		if dup {
			name = "AddGetDone/duplicate"
		}
		for _, g := range gs {
			ws = append(ws, workload{name, g, func(q Queue, n, g int, start func()) {
				AddGetDone(q, n, g, uniqueKeys, dup, start)
			}})
		}
	}
	for _, keys := range []struct {
		name string
		keys []string
	}{{"unique", uniqueKeys}, {"duplicate", duplicateKeys}} {
		for _, g := range gs {
			ws = append(ws, workload{"Pipeline/" + keys.name, g, func(q Queue, n, g int, start func()) {
				Pipeline(q, n, g, keys.keys, start)
			}})
		}
	}
	for _, g := range gs {
		ws = append(ws, workload{"AddRateLimitedForget", g, func(q Queue, n, g int, start func()) {
			RateLimitedRetry(q, n, g, retryKeys, start)
		}})
	}
	return ws
}

var impls = []Impl{Kplane, ClientGo, KplanePriority, ControllerRuntimePriority}

func bench(w workload, impl Impl) func(b *testing.B) {
	return func(b *testing.B) {
		b.ReportAllocs()
		q := impl.New()
		w.run(q, b.N, w.g, b.ResetTimer)
		b.StopTimer()
	}
}

// BenchmarkQueues runs every workload on every queue. Names read
// workload/g=N/impl, so benchstat can pivot on impl.
func BenchmarkQueues(b *testing.B) {
	for _, w := range workloads() {
		for _, impl := range impls {
			b.Run(fmt.Sprintf("%s/g=%d/impl=%s", w.name, w.g, impl.Name), bench(w, impl))
		}
	}
}

// TestSideBySide prints the comparison table recorded in bench/README.md.
// It runs only with -table; -test.benchtime sets each cell's length.
func TestSideBySide(t *testing.T) {
	if !*table {
		t.Skip("run with -table to measure")
	}
	type cell struct{ ns, allocs float64 }
	// The machine is shared, so each cell runs several times, the queues
	// taking turns, and the median run is kept.
	measureAll := func(w workload) map[string]cell {
		runs := map[string][]cell{}
		for range *reps {
			for _, impl := range impls {
				r := testing.Benchmark(bench(w, impl))
				runs[impl.Name] = append(runs[impl.Name],
					cell{float64(r.T.Nanoseconds()) / float64(r.N), float64(r.MemAllocs) / float64(r.N)})
			}
		}
		med := map[string]cell{}
		for name, cs := range runs {
			slices.SortFunc(cs, func(a, b cell) int { return cmp.Compare(a.ns, b.ns) })
			med[name] = cs[len(cs)/2]
		}
		return med
	}
	var sb strings.Builder
	sb.WriteString("| workload | g | kplane ns/op | allocs | client-go ns/op | allocs | kplane / client-go " +
		"| kplane prio ns/op | allocs | c-r prio ns/op | allocs | kplane prio / c-r prio | kplane prio / kplane |\n")
	sb.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, w := range workloads() {
		m := measureAll(w)
		k, c := m[Kplane.Name], m[ClientGo.Name]
		kp, cp := m[KplanePriority.Name], m[ControllerRuntimePriority.Name]
		fmt.Fprintf(&sb, "| %s | %d | %.0f | %.2f | %.0f | %.2f | %.2f | %.0f | %.2f | %.0f | %.2f | %.2f | %.2f |\n",
			w.name, w.g, k.ns, k.allocs, c.ns, c.allocs, k.ns/c.ns,
			kp.ns, kp.allocs, cp.ns, cp.allocs, kp.ns/cp.ns, kp.ns/k.ns)
	}
	fmt.Fprint(os.Stdout, sb.String())
}

// TestWorkloadsComplete runs each workload briefly on each queue, so the
// harness itself is checked by go test (with -race in CI).
func TestWorkloadsComplete(t *testing.T) {
	for _, w := range workloads() {
		for _, impl := range impls {
			t.Run(fmt.Sprintf("%s/g=%d/%s", w.name, w.g, impl.Name), func(t *testing.T) {
				started := 0
				w.run(impl.New(), 2000, w.g, func() { started++ })
				if started != 1 {
					t.Fatalf("start called %d times", started)
				}
			})
		}
	}
}
