package workqueue

import (
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeMetrics is an in-memory MetricsProvider. Every metric of a queue
// writes into one map, keyed by metric kind.
type fakeMetrics struct {
	mu     sync.Mutex
	names  []string
	values map[string]float64   // gauges and counters
	obs    map[string][]float64 // histograms
}

type fakeMetric struct {
	m    *fakeMetrics
	kind string
}

func (f fakeMetric) Inc() { f.add(1) }
func (f fakeMetric) Dec() { f.add(-1) }
func (f fakeMetric) add(d float64) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	f.m.values[f.kind] += d
}
func (f fakeMetric) Set(v float64) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	f.m.values[f.kind] = v
}
func (f fakeMetric) Observe(v float64) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	f.m.obs[f.kind] = append(f.m.obs[f.kind], v)
}

func (m *fakeMetrics) metric(name, kind string) fakeMetric {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.values == nil {
		m.values, m.obs = map[string]float64{}, map[string][]float64{}
	}
	m.names = append(m.names, name)
	return fakeMetric{m, kind}
}

func (m *fakeMetrics) NewDepthMetric(n string) GaugeMetric       { return m.metric(n, "depth") }
func (m *fakeMetrics) NewAddsMetric(n string) CounterMetric      { return m.metric(n, "adds") }
func (m *fakeMetrics) NewLatencyMetric(n string) HistogramMetric { return m.metric(n, "latency") }
func (m *fakeMetrics) NewWorkDurationMetric(n string) HistogramMetric {
	return m.metric(n, "work")
}
func (m *fakeMetrics) NewUnfinishedWorkSecondsMetric(n string) SettableGaugeMetric {
	return m.metric(n, "unfinished")
}
func (m *fakeMetrics) NewLongestRunningProcessorSecondsMetric(n string) SettableGaugeMetric {
	return m.metric(n, "longest")
}
func (m *fakeMetrics) NewRetriesMetric(n string) CounterMetric { return m.metric(n, "retries") }

func (m *fakeMetrics) snapshot() (map[string]float64, map[string][]float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v := map[string]float64{}
	for k, x := range m.values {
		v[k] = x
	}
	o := map[string][]float64{}
	for k, x := range m.obs {
		o[k] = append([]float64(nil), x...)
	}
	return v, o
}

// newMetricsQueue returns a rate-limiting queue named "test" on a fake
// clock, with its metrics refreshed every second into m.
func newMetricsQueue(t *testing.T) (*clocktesting.FakeClock, *fakeMetrics, *RateLimitingQueue[string]) {
	t.Helper()
	fc := clocktesting.NewFakeClock(time.Unix(1000, 0))
	m := &fakeMetrics{}
	q, err := NewRateLimiting(RateLimitingConfig[string]{
		Config: Config{Name: "test", Metrics: m, Clock: fc, MetricsUpdatePeriod: time.Second},
	})
	mustNoErr(t, err)
	t.Cleanup(q.ShutDown)
	return fc, m, q
}

func TestMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fc, m, q := newMetricsQueue(t)

		q.Add("a")
		q.Add("a") // deduplicated: not counted
		q.Add("b")
		fc.Step(2 * time.Second)
		q.Get() // a waited 2s
		synctest.Wait()
		fc.Step(3 * time.Second)
		q.Done("a") // worked 3s
		q.Get()     // b waited 5s
		q.AddAfter("c", time.Second)
		synctest.Wait()
		fc.Step(4 * time.Second) // fires the delay and the metrics refresh
		synctest.Wait()

		values, obs := m.snapshot()
		want := map[string]float64{
			"adds":       3, // a, b, then c when it became ready
			"depth":      1, // c
			"retries":    1,
			"unfinished": 4, // b, for 4s
			"longest":    4,
		}
		if diff := cmp.Diff(want, values); diff != "" {
			t.Errorf("metric values (-want +got):\n%s", diff)
		}
		wantObs := map[string][]float64{"latency": {2, 5}, "work": {3}}
		if diff := cmp.Diff(wantObs, obs); diff != "" {
			t.Errorf("observations (-want +got):\n%s", diff)
		}
		for _, n := range m.names {
			if n != "test" {
				t.Errorf("metric created for queue %q, want test", n)
			}
		}
	})
}

// The unfinished-work gauges are refreshed at the queue's construction time
// plus whole periods, as client-go's ticker started by its constructor is,
// although kplane starts its timer goroutine only on first use.
func TestMetricsRefreshOnConstructionPhase(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fc, m, q := newMetricsQueue(t)

		fc.Step(1300 * time.Millisecond)
		q.Add("a")
		q.Get() // starts the timer goroutine 300ms into a period
		synctest.Wait()
		fc.Step(700 * time.Millisecond) // the refresh at construction + 2s
		synctest.Wait()
		if v, _ := m.snapshot(); v["unfinished"] != 0.7 {
			t.Fatalf("unfinished after 700ms of work = %v, want 0.7, refreshed at construction + 2s", v["unfinished"])
		}
		fc.Step(time.Second)
		synctest.Wait()
		if v, _ := m.snapshot(); v["longest"] != 1.7 {
			t.Fatalf("longest = %v, want 1.7 one period later", v["longest"])
		}
	})
}

func TestNoMetricsWithoutProvider(t *testing.T) {
	q, err := New[string](Config{Name: "unmetered"})
	mustNoErr(t, err)
	defer q.ShutDown()
	if q.e.metrics != nil {
		t.Fatal("a queue without a provider has metrics")
	}
	q.Add("a")
	q.Get()
	q.Done("a")
	if q.e.loopStarted {
		t.Fatal("a queue without metrics or delays started its goroutine")
	}
}

func TestPrometheusMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	pm, err := NewPrometheusMetrics(PrometheusConfig{Registerer: reg})
	mustNoErr(t, err)
	if _, err := NewPrometheusMetrics(PrometheusConfig{Registerer: reg}); err == nil {
		t.Fatal("registering the workqueue metrics twice did not fail")
	}
	q, err := NewRateLimiting(RateLimitingConfig[string]{Config: Config{Name: "pods", Metrics: pm}})
	mustNoErr(t, err)
	defer q.ShutDown()
	q.Add("a")
	q.Add("b")
	q.Get()
	q.Done("a")
	q.AddAfter("a", time.Hour)

	want := `
# HELP workqueue_adds_total Total number of adds that made an item need processing.
# TYPE workqueue_adds_total counter
workqueue_adds_total{name="pods"} 2
# HELP workqueue_depth Current number of items waiting in the work queue to be processed.
# TYPE workqueue_depth gauge
workqueue_depth{name="pods"} 1
# HELP workqueue_retries_total Total number of delayed and rate-limited adds.
# TYPE workqueue_retries_total counter
workqueue_retries_total{name="pods"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"workqueue_adds_total", "workqueue_depth", "workqueue_retries_total"); err != nil {
		t.Error(err)
	}
	wantNames := []string{
		"workqueue_adds_total",
		"workqueue_depth",
		"workqueue_longest_running_processor_seconds",
		"workqueue_queue_duration_seconds",
		"workqueue_retries_total",
		"workqueue_unfinished_work_seconds",
		"workqueue_work_duration_seconds",
	}
	families, err := reg.Gather()
	mustNoErr(t, err)
	var names []string
	for _, f := range families {
		names = append(names, f.GetName())
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != 1 || m.GetLabel()[0].GetName() != "name" || m.GetLabel()[0].GetValue() != "pods" {
				t.Errorf("%s has labels %v, want name=pods", f.GetName(), m.GetLabel())
			}
		}
	}
	if diff := cmp.Diff(wantNames, names); diff != "" {
		t.Errorf("metric names (-want +got):\n%s", diff)
	}
}
