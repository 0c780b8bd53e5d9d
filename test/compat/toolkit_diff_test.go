package compat

// Differential tests of kplane's toolkit against client-go's: the same
// random operations drive a kplane work queue (or DeltaFIFO, or rate
// limiter) and client-go's, side by side, and every observable result must
// agree: what Get hands out and when, Len, ShuttingDown, when blocked Gets
// and ShutDownWithDrain return, NumRequeues, the metrics, and the deltas Pop
// hands out. Time is testing/synctest's, so delays are exact and both sides
// see the same clock. Each run logs its seed; TOOLKIT_DIFF_SEED replays one.
//
// Where kplane deliberately differs (see the package docs of pkg/workqueue
// and pkg/cache), the operations avoid the difference and a targeted test
// pins it down instead.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcache "k8s.io/client-go/tools/cache"
	clientworkqueue "k8s.io/client-go/util/workqueue"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/workqueue"
)

// diffSeed returns the seed of a randomized differential test, logged so a
// failure can be replayed with TOOLKIT_DIFF_SEED.
func diffSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("TOOLKIT_DIFF_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("TOOLKIT_DIFF_SEED: %v", err)
		}
		seed = v
	}
	t.Logf("seed %d (replay with TOOLKIT_DIFF_SEED=%d)", seed, seed)
	return seed
}

// ---- work queues ----

// diffQueue is the part of a work queue both implementations share.
type diffQueue interface {
	Add(item string)
	Get() (item string, shutdown bool)
	Done(item string)
	Len() int
	ShutDown()
	ShutDownWithDrain()
	ShuttingDown() bool
}

type diffDelaying interface {
	diffQueue
	AddAfter(item string, d time.Duration)
}

type diffRateLimiting interface {
	diffDelaying
	AddRateLimited(item string)
	Forget(item string)
	NumRequeues(item string) int
}

// metricsRecorder records the metrics of one queue: gauge and counter
// values and histogram observations in order. Both implementations' metric
// interfaces have the same methods, so one recordedMetric serves both.
type metricsRecorder struct {
	mu     sync.Mutex
	values map[string]float64
	obs    map[string][]float64
}

type recordedMetric struct {
	r    *metricsRecorder
	kind string
}

func (m recordedMetric) Inc() { m.set(func(v float64) float64 { return v + 1 }) }
func (m recordedMetric) Dec() { m.set(func(v float64) float64 { return v - 1 }) }
func (m recordedMetric) Set(x float64) {
	m.set(func(float64) float64 { return x })
}
func (m recordedMetric) Observe(x float64) {
	m.r.mu.Lock()
	defer m.r.mu.Unlock()
	m.r.obs[m.kind] = append(m.r.obs[m.kind], x)
}
func (m recordedMetric) set(f func(float64) float64) {
	m.r.mu.Lock()
	defer m.r.mu.Unlock()
	m.r.values[m.kind] = f(m.r.values[m.kind])
}

func newMetricsRecorder() *metricsRecorder {
	return &metricsRecorder{values: map[string]float64{}, obs: map[string][]float64{}}
}

func (r *metricsRecorder) metric(kind string) recordedMetric { return recordedMetric{r, kind} }

// snapshot returns the non-zero values (a gauge never set reads as zero)
// and every observation.
func (r *metricsRecorder) snapshot() (map[string]float64, map[string][]float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := map[string]float64{}
	for k, x := range r.values {
		if x != 0 {
			v[k] = x
		}
	}
	o := map[string][]float64{}
	for k, x := range r.obs {
		o[k] = slices.Clone(x)
	}
	return v, o
}

// kplaneMetrics and clientMetrics hand out a recorder's metrics to each
// implementation's MetricsProvider interface.
type kplaneMetrics struct{ *metricsRecorder }

func (p kplaneMetrics) NewDepthMetric(string) workqueue.GaugeMetric { return p.metric("depth") }
func (p kplaneMetrics) NewAddsMetric(string) workqueue.CounterMetric {
	return p.metric("adds_total")
}
func (p kplaneMetrics) NewLatencyMetric(string) workqueue.HistogramMetric {
	return p.metric("queue_duration_seconds")
}
func (p kplaneMetrics) NewWorkDurationMetric(string) workqueue.HistogramMetric {
	return p.metric("work_duration_seconds")
}
func (p kplaneMetrics) NewUnfinishedWorkSecondsMetric(string) workqueue.SettableGaugeMetric {
	return p.metric("unfinished_work_seconds")
}
func (p kplaneMetrics) NewLongestRunningProcessorSecondsMetric(string) workqueue.SettableGaugeMetric {
	return p.metric("longest_running_processor_seconds")
}
func (p kplaneMetrics) NewRetriesMetric(string) workqueue.CounterMetric {
	return p.metric("retries_total")
}

type clientMetrics struct{ *metricsRecorder }

func (p clientMetrics) NewDepthMetric(string) clientworkqueue.GaugeMetric { return p.metric("depth") }
func (p clientMetrics) NewAddsMetric(string) clientworkqueue.CounterMetric {
	return p.metric("adds_total")
}
func (p clientMetrics) NewLatencyMetric(string) clientworkqueue.HistogramMetric {
	return p.metric("queue_duration_seconds")
}
func (p clientMetrics) NewWorkDurationMetric(string) clientworkqueue.HistogramMetric {
	return p.metric("work_duration_seconds")
}
func (p clientMetrics) NewUnfinishedWorkSecondsMetric(string) clientworkqueue.SettableGaugeMetric {
	return p.metric("unfinished_work_seconds")
}
func (p clientMetrics) NewLongestRunningProcessorSecondsMetric(string) clientworkqueue.SettableGaugeMetric {
	return p.metric("longest_running_processor_seconds")
}
func (p clientMetrics) NewRetriesMetric(string) clientworkqueue.CounterMetric {
	return p.metric("retries_total")
}

// limiter is the method set both implementations' rate limiters share.
type limiter interface {
	When(item string) time.Duration
	Forget(item string)
	NumRequeues(item string) int
}

// tieBreakLimiter rounds the delays of a limiter up to whole milliseconds
// and adds a nanosecond tag per key. Items whose ready times tie come out of
// client-go's waiting heap in no specified order, so the queue test keeps
// every ready time distinct: the clock only moves in whole milliseconds,
// rate-limited adds carry tags 1..diffKeys, delayed adds tags from 1000 up.
type tieBreakLimiter struct{ limiter }

func (l tieBreakLimiter) When(item string) time.Duration {
	d := l.limiter.When(item)
	if r := d % time.Millisecond; r != 0 {
		d += time.Millisecond - r
	}
	return d + time.Duration(keyIndex(item)+1)
}

const diffKeys = 8

func diffKey(i int) string { return "k" + strconv.Itoa(i) }

func keyIndex(key string) int {
	i, _ := strconv.Atoi(key[1:])
	return i
}

// queueKind builds a pair of queues of one kind: kplane's and client-go's.
type queueKind struct {
	name string
	new  func(km kplaneMetrics, cm clientMetrics) (kq, cq diffQueue, err error)
}

var queueKinds = []queueKind{
	{"queue", func(km kplaneMetrics, cm clientMetrics) (diffQueue, diffQueue, error) {
		kq, err := workqueue.New[string](workqueue.Config{Name: "diff", Metrics: km})
		cq := clientworkqueue.NewTypedWithConfig(clientworkqueue.TypedQueueConfig[string]{Name: "diff", MetricsProvider: cm})
		return kq, cq, err
	}},
	{"delaying", func(km kplaneMetrics, cm clientMetrics) (diffQueue, diffQueue, error) {
		kq, err := workqueue.NewDelaying[string](workqueue.Config{Name: "diff", Metrics: km})
		cq := clientworkqueue.NewTypedDelayingQueueWithConfig(clientworkqueue.TypedDelayingQueueConfig[string]{Name: "diff", MetricsProvider: cm})
		return kq, cq, err
	}},
	{"ratelimiting", func(km kplaneMetrics, cm clientMetrics) (diffQueue, diffQueue, error) {
		kl, err := kplaneCompositeLimiter()
		if err != nil {
			return nil, nil, err
		}
		kq, err := workqueue.NewRateLimiting(workqueue.RateLimitingConfig[string]{
			Config:      workqueue.Config{Name: "diff", Metrics: km},
			RateLimiter: tieBreakLimiter{kl},
		})
		cq := clientworkqueue.NewTypedRateLimitingQueueWithConfig[string](tieBreakLimiter{clientCompositeLimiter()},
			clientworkqueue.TypedRateLimitingQueueConfig[string]{Name: "diff", MetricsProvider: cm})
		return kq, cq, err
	}},
}

// kplaneCompositeLimiter and clientCompositeLimiter build the same limiter
// from each implementation's parts: every kind of limiter, with delays short
// enough for a test to reach the caps.
func kplaneCompositeLimiter() (workqueue.RateLimiter[string], error) {
	exp, err := workqueue.NewExponentialLimiter[string](workqueue.ExponentialConfig{Base: time.Millisecond, Max: 300 * time.Millisecond})
	if err != nil {
		return nil, err
	}
	fastSlow, err := workqueue.NewFastSlowLimiter[string](workqueue.FastSlowConfig{Fast: 2 * time.Millisecond, Slow: 40 * time.Millisecond, FastAttempts: 3})
	if err != nil {
		return nil, err
	}
	maxOf, err := workqueue.NewMaxOfLimiter(exp, fastSlow, workqueue.DefaultControllerRateLimiter[string]())
	if err != nil {
		return nil, err
	}
	return workqueue.NewMaxWaitLimiter(workqueue.MaxWaitConfig[string]{Limiter: maxOf, Max: 250 * time.Millisecond})
}

func clientCompositeLimiter() clientworkqueue.TypedRateLimiter[string] {
	return clientworkqueue.NewTypedWithMaxWaitRateLimiter(clientworkqueue.NewTypedMaxOfRateLimiter(
		clientworkqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, 300*time.Millisecond),
		clientworkqueue.NewTypedItemFastSlowRateLimiter[string](2*time.Millisecond, 40*time.Millisecond, 3),
		clientworkqueue.DefaultTypedControllerRateLimiter[string](),
	), 250*time.Millisecond)
}

// getResult is what a Get returned.
type getResult struct {
	Item     string
	Shutdown bool
}

// queueSide is one implementation's queue and the calls on it still
// blocked: Gets, and ShutDownWithDrain.
type queueSide struct {
	q       diffQueue
	metrics *metricsRecorder
	getters []chan getResult // each of capacity 1
	drained chan struct{}    // closed when ShutDownWithDrain returned; nil before
}

func (s *queueSide) startGet() {
	ch := make(chan getResult, 1)
	s.getters = append(s.getters, ch)
	go func() {
		item, shutdown := s.q.Get()
		ch <- getResult{item, shutdown}
	}()
}

// returnedGets takes the results of the blocked Gets that returned, sorted.
// Which of several blocked Gets gets an item is not compared: client-go's
// can reorder them (see the workqueue package doc), and workers are alike.
func (s *queueSide) returnedGets() []getResult {
	var out []getResult
	var still []chan getResult
	for _, ch := range s.getters {
		select {
		case r := <-ch:
			out = append(out, r)
		default:
			still = append(still, ch)
		}
	}
	s.getters = still
	slices.SortFunc(out, func(a, b getResult) int { return strings.Compare(a.Item, b.Item) })
	return out
}

func (s *queueSide) drainReturned() bool {
	if s.drained == nil {
		return false
	}
	select {
	case <-s.drained:
		return true
	default:
		return false
	}
}

// queueState is everything observable about a queue at rest.
type queueState struct {
	Len          int
	ShuttingDown bool
	NumRequeues  []int
	Returned     []getResult
	Blocked      int // Gets still blocked
	Drained      bool
	Values       map[string]float64
	Observations map[string][]float64
}

func (s *queueSide) state() queueState {
	st := queueState{Len: s.q.Len(), ShuttingDown: s.q.ShuttingDown(), Returned: s.returnedGets(), Drained: s.drainReturned()}
	st.Blocked = len(s.getters)
	if rl, ok := s.q.(diffRateLimiting); ok {
		for i := range diffKeys {
			st.NumRequeues = append(st.NumRequeues, rl.NumRequeues(diffKey(i)))
		}
	}
	st.Values, st.Observations = s.metrics.snapshot()
	return st
}

func TestDiffWorkqueue(t *testing.T) {
	seed := diffSeed(t)
	rounds, ops := 6, 300 // 5,400 operations over the three kinds
	if testing.Short() {
		rounds = 2
	}
	for _, kind := range queueKinds {
		t.Run(kind.name, func(t *testing.T) {
			for round := range rounds {
				rng := rand.New(rand.NewPCG(seed, uint64(round)))
				synctest.Test(t, func(t *testing.T) { runQueueDiff(t, kind, rng, ops) })
				if t.Failed() {
					t.Fatalf("round %d failed", round)
				}
			}
		})
	}
}

// runQueueDiff drives one pair of queues through n random operations and
// fails at the first observable difference.
func runQueueDiff(t *testing.T, kind queueKind, rng *rand.Rand, n int) {
	km, cm := kplaneMetrics{newMetricsRecorder()}, clientMetrics{newMetricsRecorder()}
	kq, cq, err := kind.new(km, cm)
	if err != nil {
		t.Fatal(err)
	}
	k := &queueSide{q: kq, metrics: km.metricsRecorder}
	c := &queueSide{q: cq, metrics: cm.metricsRecorder}
	both := func(f func(s *queueSide)) { f(k); f(c) }
	// Releases blocked calls and stops the goroutines, whatever happens.
	defer both(func(s *queueSide) { s.q.ShutDown() })
	var log []string  // the operations so far, for the failure message
	var held []string // items handed out and not yet Done, on both sides
	tag := 1000       // the next delayed add's nanosecond tag
	check := func() bool {
		t.Helper()
		synctest.Wait()
		ks, cs := k.state(), c.state()
		// client-go and kplane both sum the unfinished work of the items in
		// map order, so the last bits of the sum vary from run to run.
		if diff := cmp.Diff(cs, ks, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
			t.Errorf("after %v\nkplane differs from client-go (-client-go +kplane):\n%s", log, diff)
			return false
		}
		for _, r := range ks.Returned {
			if !r.Shutdown {
				held = append(held, r.Item)
			}
		}
		return true
	}
	_, delaying := kq.(diffDelaying)
	_, limited := kq.(diffRateLimiting)
	for i := 0; i < n; i++ {
		key := diffKey(rng.IntN(diffKeys))
		shut := kq.ShuttingDown()
		switch r := rng.IntN(100); {
		case r < 22:
			log = append(log, "Add "+key)
			both(func(s *queueSide) { s.q.Add(key) })
		case r < 37 && delaying:
			d := time.Duration(rng.IntN(60))*time.Millisecond + time.Duration(tag)
			tag++
			switch rng.IntN(6) {
			case 0:
				d = 0
			case 1:
				d = -time.Millisecond
			}
			log = append(log, fmt.Sprintf("AddAfter %s %v", key, d))
			both(func(s *queueSide) { s.q.(diffDelaying).AddAfter(key, d) })
		case r < 47 && limited && !shut:
			// After ShutDown client-go's still counts a failure; kplane's
			// does not (TestDiffAddRateLimitedAfterShutDown).
			log = append(log, "AddRateLimited "+key)
			both(func(s *queueSide) { s.q.(diffRateLimiting).AddRateLimited(key) })
		case r < 51 && limited:
			log = append(log, "Forget "+key)
			both(func(s *queueSide) { s.q.(diffRateLimiting).Forget(key) })
		case r < 70:
			if kq.Len() > 0 || shut { // a Get that does not block
				log = append(log, "Get")
				kr, kshut := kq.Get()
				cr, cshut := cq.Get()
				if kr != cr || kshut != cshut {
					t.Fatalf("after %v\nGet = %q, %v; client-go's %q, %v", log, kr, kshut, cr, cshut)
				}
				if !kshut {
					held = append(held, kr)
				}
			} else if len(k.getters) < 2 {
				log = append(log, "Get (blocks)")
				both(func(s *queueSide) { s.startGet() })
			} else {
				continue
			}
		case r < 88:
			if len(held) == 0 {
				continue
			}
			j := rng.IntN(len(held))
			item := held[j]
			held = slices.Delete(held, j, j+1)
			log = append(log, "Done "+item)
			both(func(s *queueSide) { s.q.Done(item) })
		case r < 98:
			d := time.Duration(1+rng.IntN(30)) * time.Millisecond
			if rng.IntN(10) == 0 {
				d = 700 * time.Millisecond // past a metrics refresh
			}
			log = append(log, fmt.Sprintf("Sleep %v", d))
			time.Sleep(d)
		default:
			if shut || i < n/2 {
				continue
			}
			if rng.IntN(2) == 0 {
				log = append(log, "ShutDown")
				both(func(s *queueSide) { s.q.ShutDown() })
			} else {
				log = append(log, "ShutDownWithDrain (blocks)")
				both(func(s *queueSide) {
					s.drained = make(chan struct{})
					go func() {
						s.q.ShutDownWithDrain()
						close(s.drained)
					}()
				})
			}
		}
		if !check() {
			return
		}
	}
	// Shut down, finish what was handed out and take what is left.
	log = append(log, "ShutDown")
	both(func(s *queueSide) { s.q.ShutDown() })
	if !check() {
		return
	}
	for len(held) > 0 {
		item := held[0]
		held = held[1:]
		log = append(log, "Done "+item)
		both(func(s *queueSide) { s.q.Done(item) })
		if !check() {
			return
		}
	}
	for {
		log = append(log, "Get")
		kr, kshut := kq.Get()
		cr, cshut := cq.Get()
		if kr != cr || kshut != cshut {
			t.Fatalf("after %v\nGet = %q, %v; client-go's %q, %v", log, kr, kshut, cr, cshut)
		}
		if kshut {
			break
		}
		both(func(s *queueSide) { s.q.Done(kr) })
		if !check() {
			return
		}
	}
}

// kplane's AddRateLimited after ShutDown records nothing: a limiter may be
// shared, and a queue that is gone should not spend its tokens or count
// failures. client-go's still asks the limiter, counting one more failure.
func TestDiffAddRateLimitedAfterShutDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		kl, err := kplaneCompositeLimiter()
		if err != nil {
			t.Fatal(err)
		}
		kq, err := workqueue.NewRateLimiting(workqueue.RateLimitingConfig[string]{RateLimiter: kl})
		if err != nil {
			t.Fatal(err)
		}
		cq := clientworkqueue.NewTypedRateLimitingQueueWithConfig[string](clientCompositeLimiter(), clientworkqueue.TypedRateLimitingQueueConfig[string]{})
		kq.ShutDown()
		cq.ShutDown()
		kq.AddRateLimited("a")
		cq.AddRateLimited("a")
		if kn, cn := kq.NumRequeues("a"), cq.NumRequeues("a"); kn != 0 || cn != 1 {
			t.Fatalf("NumRequeues after AddRateLimited on a shut-down queue = %d, client-go's %d; want 0 and 1", kn, cn)
		}
	})
}

// ---- rate limiters ----

func TestDiffRateLimiters(t *testing.T) {
	seed := diffSeed(t)
	ms := time.Millisecond
	type pair struct {
		name   string
		kplane func() (workqueue.RateLimiter[string], error)
		client func() clientworkqueue.TypedRateLimiter[string]
	}
	exp := func(base, max time.Duration) pair {
		return pair{fmt.Sprintf("exponential %v..%v", base, max),
			func() (workqueue.RateLimiter[string], error) {
				return workqueue.NewExponentialLimiter[string](workqueue.ExponentialConfig{Base: base, Max: max})
			},
			func() clientworkqueue.TypedRateLimiter[string] {
				return clientworkqueue.NewTypedItemExponentialFailureRateLimiter[string](base, max)
			}}
	}
	fastSlow := func(fast, slow time.Duration, attempts int) pair {
		return pair{fmt.Sprintf("fast-slow %v %v %d", fast, slow, attempts),
			func() (workqueue.RateLimiter[string], error) {
				return workqueue.NewFastSlowLimiter[string](workqueue.FastSlowConfig{Fast: fast, Slow: slow, FastAttempts: attempts})
			},
			func() clientworkqueue.TypedRateLimiter[string] {
				return clientworkqueue.NewTypedItemFastSlowRateLimiter[string](fast, slow, attempts)
			}}
	}
	pairs := []pair{
		exp(5*ms, 1000*time.Second),
		exp(time.Second, ms), // a base above the cap: every delay is the cap
		exp(3, time.Hour),
		exp(time.Microsecond, time.Hour), // far past 60 failures
		fastSlow(ms, time.Second, 3),
		fastSlow(0, time.Second, 0),
		fastSlow(ms, 0, 2),
		{"default controller", func() (workqueue.RateLimiter[string], error) {
			return workqueue.DefaultControllerRateLimiter[string](), nil
		}, clientworkqueue.DefaultTypedControllerRateLimiter[string]},
		{"max-wait over max-of", kplaneCompositeLimiter, clientCompositeLimiter},
	}
	for _, p := range pairs {
		t.Run(p.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 0))
			// The token buckets read time.Now, which synctest controls.
			synctest.Test(t, func(t *testing.T) {
				kl, err := p.kplane()
				if err != nil {
					t.Fatal(err)
				}
				cl := p.client()
				var log []string
				for range 2000 {
					key := diffKey(rng.IntN(3))
					switch r := rng.IntN(100); {
					case r < 80:
						log = append(log, "When "+key)
						if kd, cd := kl.When(key), cl.When(key); kd != cd {
							t.Fatalf("after %v: When = %v, client-go's %v", log, kd, cd)
						}
					case r < 85:
						log = append(log, "Forget "+key)
						kl.Forget(key)
						cl.Forget(key)
					default:
						d := time.Duration(rng.IntN(200)) * ms
						log = append(log, fmt.Sprintf("Sleep %v", d))
						time.Sleep(d)
					}
					for i := range 3 {
						if kn, cn := kl.NumRequeues(diffKey(i)), cl.NumRequeues(diffKey(i)); kn != cn {
							t.Fatalf("after %v: NumRequeues(%s) = %d, client-go's %d", log, diffKey(i), kn, cn)
						}
					}
				}
			})
		})
	}
}

// ---- DeltaFIFO ----

// knownStore is what an informer's indexer is to its DeltaFIFO: the objects
// already processed. Its keys are listed in order, so that both FIFOs see
// them in the same order.
type knownStore struct{ objs map[string]*corev1.Pod }

func (s *knownStore) ListKeys() []string {
	keys := make([]string, 0, len(s.objs))
	for k := range s.objs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// describe returns the resourceVersion of every object, by key.
func (s *knownStore) describe() map[string]string {
	out := map[string]string{}
	for k, p := range s.objs {
		out[k] = describePod(p)
	}
	return out
}

type kplaneKnown struct{ *knownStore }

func (s kplaneKnown) GetByKey(key string) (*corev1.Pod, bool) {
	p, ok := s.objs[key]
	return p, ok
}

type clientKnown struct{ *knownStore }

func (s clientKnown) GetByKey(key string) (any, bool, error) {
	p, ok := s.objs[key]
	if !ok {
		return nil, false, nil
	}
	return p, true, nil
}

// fifoPop is one Pop, reduced to comparable values.
type fifoPop struct {
	Key     string
	Deltas  []string // "Type:rv", marked "(t)" when transformed and "tombstone <key>"
	Initial bool
	Err     string
}

var errDiffProcess = errors.New("process failed")

// diffTransform marks what it transforms, on a copy, and counts its calls.
func diffTransform(calls *int) func(*corev1.Pod) (*corev1.Pod, error) {
	return func(p *corev1.Pod) (*corev1.Pod, error) {
		*calls++
		p = p.DeepCopy()
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations["transformed"] = "yes"
		return p, nil
	}
}

func describePod(p *corev1.Pod) string {
	if p == nil {
		return "<nil>"
	}
	s := p.ResourceVersion
	if p.Annotations["transformed"] == "yes" {
		s += "(t)"
	}
	return s
}

func TestDiffDeltaFIFO(t *testing.T) {
	seed := diffSeed(t)
	rounds := 20 // 5,000 operations
	if testing.Short() {
		rounds = 5
	}
	for round := range rounds {
		rng := rand.New(rand.NewPCG(seed, uint64(round)))
		withKnown := round%4 != 3 // an informer always has them; a bare FIFO may not
		synctest.Test(t, func(t *testing.T) { runFIFODiff(t, rng, 250, withKnown) })
		if t.Failed() {
			t.Fatalf("round %d (known objects %v) failed", round, withKnown)
		}
	}
}

func runFIFODiff(t *testing.T, rng *rand.Rand, n int, withKnown bool) {
	kstore, cstore := &knownStore{objs: map[string]*corev1.Pod{}}, &knownStore{objs: map[string]*corev1.Pod{}}
	var kcalls, ccalls int
	kcfg := cache.DeltaFIFOConfig[*corev1.Pod]{Transform: diffTransform(&kcalls)}
	ctransform := diffTransform(&ccalls)
	copts := clientcache.DeltaFIFOOptions{
		EmitDeltaTypeReplaced: true, // as every informer of client-go's asks
		Transformer: func(obj any) (any, error) {
			return ctransform(obj.(*corev1.Pod))
		},
	}
	if withKnown {
		kcfg.KnownObjects = kplaneKnown{kstore}
		copts.KnownObjects = clientKnown{cstore}
	}
	kf, err := cache.NewDeltaFIFO(kcfg)
	if err != nil {
		t.Fatal(err)
	}
	cf := clientcache.NewDeltaFIFOWithOptions(copts)

	rv := 0
	newPod := func(key string) *corev1.Pod {
		rv++
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: key, ResourceVersion: strconv.Itoa(rv)}}
	}
	var log []string
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("after %v\n%s", log, fmt.Sprintf(format, args...))
	}
	// pop pops one key from each FIFO, applies its deltas to that side's
	// store as an informer does, and compares.
	pop := func(failProcess bool) (done bool) {
		t.Helper()
		var kp, cp fifoPop
		kerr := kf.Pop(context.Background(), func(d cache.Deltas[*corev1.Pod], initial bool) error {
			key, err := kf.KeyOf(d)
			if err != nil {
				fail("kplane KeyOf(deltas): %v", err)
			}
			kp = fifoPop{Key: key, Initial: initial}
			for _, x := range d {
				s := string(x.Type) + ":" + describePod(x.Object)
				if x.Tombstone != nil {
					s += " tombstone " + x.Tombstone.Key
					if x.Tombstone.Obj != x.Object {
						fail("kplane tombstone of %s holds another object than its delta", key)
					}
				}
				kp.Deltas = append(kp.Deltas, s)
			}
			if failProcess {
				return errDiffProcess
			}
			for _, x := range d {
				if x.Type == cache.Deleted {
					delete(kstore.objs, key)
				} else {
					kstore.objs[key] = x.Object
				}
			}
			return nil
		})
		if errors.Is(kerr, cache.ErrFIFOClosed) {
			kp.Err = "closed"
		} else if kerr != nil {
			kp.Err = kerr.Error()
		}
		cres := make(chan error, 1)
		go func() {
			_, err := cf.Pop(func(obj any, initial bool) error {
				d := obj.(clientcache.Deltas)
				key, err := cf.KeyOf(d)
				if err != nil {
					return fmt.Errorf("client-go KeyOf(deltas): %w", err)
				}
				cp = fifoPop{Key: key, Initial: initial}
				for _, x := range d {
					switch o := x.Object.(type) {
					case *corev1.Pod:
						cp.Deltas = append(cp.Deltas, string(x.Type)+":"+describePod(o))
					case clientcache.DeletedFinalStateUnknown:
						p, _ := o.Obj.(*corev1.Pod)
						cp.Deltas = append(cp.Deltas, string(x.Type)+":"+describePod(p)+" tombstone "+o.Key)
					default:
						return fmt.Errorf("client-go delta holds a %T", x.Object)
					}
				}
				if failProcess {
					return errDiffProcess
				}
				for _, x := range d {
					if x.Type == clientcache.Deleted {
						delete(cstore.objs, key)
					} else {
						cstore.objs[key] = x.Object.(*corev1.Pod)
					}
				}
				return nil
			})
			cres <- err
		}()
		synctest.Wait()
		select {
		case cerr := <-cres:
			if errors.Is(cerr, clientcache.ErrFIFOClosed) {
				cp.Err = "closed"
			} else if cerr != nil {
				cp.Err = cerr.Error()
			}
		default:
			cf.Close() // release the blocked Pop
			<-cres
			fail("kplane popped %+v; client-go's FIFO is empty", kp)
		}
		if diff := cmp.Diff(cp, kp); diff != "" {
			fail("Pop differs (-client-go +kplane):\n%s", diff)
		}
		return kp.Err == "closed"
	}
	check := func() {
		t.Helper()
		if ks, cs := kf.HasSynced(), cf.HasSynced(); ks != cs {
			fail("HasSynced = %v, client-go's %v", ks, cs)
		}
		if kc, cc := kf.IsClosed(), cf.IsClosed(); kc != cc {
			fail("IsClosed = %v, client-go's %v", kc, cc)
		}
		if kcalls != ccalls {
			fail("transform called %d times, client-go's %d", kcalls, ccalls)
		}
		if diff := cmp.Diff(cstore.describe(), kstore.describe()); diff != "" {
			fail("processed objects differ (-client-go +kplane):\n%s", diff)
		}
	}
	const fifoKeys = 10
	for i := 0; i < n; i++ {
		key := "p" + strconv.Itoa(rng.IntN(fifoKeys))
		var kerr, cerr error
		switch r := rng.IntN(100); {
		case r < 15:
			p := newPod(key)
			log = append(log, "Add "+key+":"+p.ResourceVersion)
			kerr, cerr = kf.Add(p), cf.Add(p)
		case r < 30:
			p := newPod(key)
			log = append(log, "Update "+key+":"+p.ResourceVersion)
			kerr, cerr = kf.Update(p), cf.Update(p)
		case r < 45:
			p := newPod(key)
			log = append(log, "Delete "+key+":"+p.ResourceVersion)
			kerr, cerr = kf.Delete(p), cf.Delete(p)
		case r < 53:
			var list []*corev1.Pod
			for j := range fifoKeys {
				if rng.IntN(2) == 0 {
					list = append(list, newPod("p"+strconv.Itoa(j)))
				}
			}
			if len(list) > 0 && rng.IntN(8) == 0 {
				list = append(list, newPod(list[0].Name)) // a key twice
			}
			var names []string
			clist := make([]any, len(list))
			for j, p := range list {
				names = append(names, p.Name+":"+p.ResourceVersion)
				clist[j] = p
			}
			log = append(log, fmt.Sprintf("Replace %v", names))
			kerr, cerr = kf.Replace(list), cf.Replace(clist, strconv.Itoa(rv))
		case r < 58:
			log = append(log, "Resync")
			kerr, cerr = kf.Resync(), cf.Resync()
		case r < 98:
			if kf.Len() == 0 {
				continue
			}
			failProcess := rng.IntN(20) == 0
			log = append(log, fmt.Sprintf("Pop (process fails: %v)", failProcess))
			pop(failProcess)
		default:
			if i < n*3/4 {
				continue
			}
			log = append(log, "Close")
			kf.Close()
			cf.Close()
		}
		if (kerr == nil) != (cerr == nil) {
			fail("error %v, client-go's %v", kerr, cerr)
		}
		check()
	}
	// Close and take what is left: both must run out together.
	log = append(log, "Close")
	kf.Close()
	cf.Close()
	for {
		log = append(log, "Pop")
		if pop(false) {
			break
		}
		check()
	}
}

// KeyOf agrees with client-go's on objects, Deltas and tombstones.
func TestDiffDeltaFIFOKeyOf(t *testing.T) {
	kf, err := cache.NewDeltaFIFO(cache.DeltaFIFOConfig[*corev1.Pod]{})
	if err != nil {
		t.Fatal(err)
	}
	cf := clientcache.NewDeltaFIFOWithOptions(clientcache.DeltaFIFOOptions{})
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}
	node := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	ktomb := cache.DeletedFinalStateUnknown[*corev1.Pod]{Key: "ns/gone", Obj: p}
	ctomb := clientcache.DeletedFinalStateUnknown{Key: "ns/gone", Obj: p}
	for _, tc := range []struct {
		name       string
		kobj, cobj any
	}{
		{"object", p, p},
		{"cluster-scoped", node, node},
		{"tombstone", ktomb, ctomb},
		{"deltas", cache.Deltas[*corev1.Pod]{{Type: cache.Added, Object: node}, {Type: cache.Updated, Object: p}},
			clientcache.Deltas{{Type: clientcache.Added, Object: node}, {Type: clientcache.Updated, Object: p}}},
		{"deltas ending in a tombstone", cache.Deltas[*corev1.Pod]{{Type: cache.Deleted, Object: p, Tombstone: &ktomb}},
			clientcache.Deltas{{Type: clientcache.Deleted, Object: ctomb}}},
		{"empty deltas", cache.Deltas[*corev1.Pod]{}, clientcache.Deltas{}},
	} {
		kk, kerr := kf.KeyOf(tc.kobj)
		ck, cerr := cf.KeyOf(tc.cobj)
		if kk != ck || (kerr == nil) != (cerr == nil) {
			t.Errorf("%s: KeyOf = %q, %v; client-go's %q, %v", tc.name, kk, kerr, ck, cerr)
		}
	}
}

// Done of an item never handed out is a no-op in kplane. client-go's queues
// the item again when it is waiting, so it is in the queue twice and two
// workers get it at once.
func TestDiffDoneOfAnItemNotHandedOut(t *testing.T) {
	kq, err := workqueue.New[string](workqueue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer kq.ShutDown()
	cq := clientworkqueue.NewTyped[string]()
	defer cq.ShutDown()
	for _, q := range []diffQueue{kq, cq} {
		q.Add("a")
		q.Done("a")
	}
	if kn, cn := kq.Len(), cq.Len(); kn != 1 || cn != 2 {
		t.Fatalf("Len after Add and a stray Done = %d, client-go's %d; want 1 and 2", kn, cn)
	}
	kq.Get()
	if n := kq.Len(); n != 0 {
		t.Fatalf("kplane still has %d items ready while a is processed", n)
	}
}

// kplane's exponential limiter returns its cap for every delay that does
// not fit a time.Duration. client-go's computes in floating point: where
// base*2^failures rounds to exactly 2^63ns (a base of a power of two
// nanoseconds) its overflow check misses, and the conversion back to a
// Duration overflows, to a negative delay (an immediate retry) on amd64,
// whatever the cap.
func TestDiffExponentialLimiterAtTheLimit(t *testing.T) {
	const maxDelay = time.Hour
	kl, err := workqueue.NewExponentialLimiter[string](workqueue.ExponentialConfig{Base: 1, Max: maxDelay})
	if err != nil {
		t.Fatal(err)
	}
	cl := clientworkqueue.NewTypedItemExponentialFailureRateLimiter[string](1, maxDelay)
	for i := range 63 {
		if kd, cd := kl.When("a"), cl.When("a"); kd != cd {
			t.Fatalf("failure %d: When = %v, client-go's %v", i+1, kd, cd)
		}
	}
	kd, cd := kl.When("a"), cl.When("a") // 2^63ns
	if kd != maxDelay {
		t.Fatalf("When at 2^63ns = %v, want the cap", kd)
	}
	t.Logf("client-go's limiter returns %v there", cd)
	if kd, cd := kl.When("a"), cl.When("a"); kd != cd {
		t.Fatalf("past 2^63ns: When = %v, client-go's %v", kd, cd)
	}
}
