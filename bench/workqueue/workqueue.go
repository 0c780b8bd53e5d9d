// Package workqueue measures kplane's work queues side by side with
// client-go's TypedRateLimitingQueue and controller-runtime's priority queue.
// The workloads live here; the benchmarks and the side-by-side table are in
// the package's tests.
package workqueue

import (
	"fmt"
	"strings"
	"sync"
	"time"

	kwq "github.com/kplane/kplane/pkg/workqueue"
	cgwq "k8s.io/client-go/util/workqueue"
	crpq "sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
)

// Queue is the part of a rate-limited work queue the workloads use. All
// four measured queues implement it.
type Queue interface {
	Add(item string)
	AddRateLimited(item string)
	Forget(item string)
	Get() (item string, shutdown bool)
	Done(item string)
	ShutDown()
}

// Impl names a queue implementation and builds fresh instances of it.
type Impl struct {
	Name string
	New  func() Queue
}

// Every queue uses a per-item exponential limiter of 5ms doubling up to
// 1000s, so the rate-limited workload measures the queues, not different
// limiters.
const (
	baseDelay = 5 * time.Millisecond
	maxDelay  = 1000 * time.Second
)

// The measured implementations.
var (
	Kplane = Impl{"kplane", func() Queue {
		l, err := kwq.NewExponentialLimiter[string](kwq.ExponentialConfig{Base: baseDelay, Max: maxDelay})
		must(err)
		q, err := kwq.NewRateLimiting(kwq.RateLimitingConfig[string]{RateLimiter: l})
		must(err)
		return q
	}}
	ClientGo = Impl{"client-go", func() Queue {
		return cgwq.NewTypedRateLimitingQueueWithConfig(
			cgwq.NewTypedItemExponentialFailureRateLimiter[string](baseDelay, maxDelay),
			cgwq.TypedRateLimitingQueueConfig[string]{})
	}}
	KplanePriority = Impl{"kplane-priority", func() Queue {
		l, err := kwq.NewExponentialLimiter[string](kwq.ExponentialConfig{Base: baseDelay, Max: maxDelay})
		must(err)
		q, err := kwq.NewPriority(kwq.PriorityConfig[string]{RateLimiter: l})
		must(err)
		return q
	}}
	ControllerRuntimePriority = Impl{"controller-runtime-priority", func() Queue {
		// An empty name turns metrics off, as for the other queues.
		return crpq.New("", func(o *crpq.Opts[string]) {
			o.RateLimiter = cgwq.NewTypedItemExponentialFailureRateLimiter[string](baseDelay, maxDelay)
		})
	}}
)

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// Keys returns n distinct keys shaped like controller keys.
func Keys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("default/pod-%06d", i)
	}
	return keys
}

// AddGetDone has g goroutines each run Add, Get, Done cycles, n cycles in
// total, each goroutine cycling through its own slice of keys. With dup,
// every cycle adds its key twice, and the second add is deduplicated. The
// queue holds at most about g items, the way a controller's queue mostly
// does. start is called just before the goroutines start.
func AddGetDone(q Queue, n, g int, keys []string, dup bool, start func()) {
	start()
	var wg sync.WaitGroup
	span := len(keys) / g
	for p := range g {
		own := keys[p*span : (p+1)*span]
		count := n / g
		if p == 0 {
			count += n % g
		}
		wg.Go(func() {
			j := 0
			for range count {
				q.Add(own[j])
				if dup {
					q.Add(own[j])
				}
				item, _ := q.Get()
				q.Done(item)
				if j++; j == len(own) {
					j = 0
				}
			}
		})
	}
	wg.Wait()
	q.ShutDown()
}

const stopPrefix = "stop/"

// Pipeline has g producers add n items in total, cycling through keys
// (each producer through its own slice of them), while g consumers Get and
// Done. It returns once every item added before the producers finished has
// been handed out: each consumer stops at one of g sentinel keys added last,
// which FIFO order hands out after everything added before them. start is
// called once the consumers are running, just before the producers start.
func Pipeline(q Queue, n, g int, keys []string, start func()) {
	var consumers sync.WaitGroup
	for range g {
		consumers.Go(func() {
			for {
				item, shutdown := q.Get()
				if shutdown {
					return
				}
				q.Done(item)
				if strings.HasPrefix(item, stopPrefix) {
					return
				}
			}
		})
	}
	start()
	var producers sync.WaitGroup
	span := len(keys) / g
	for p := range g {
		own := keys[p*span : (p+1)*span]
		count := n / g
		if p == 0 {
			count += n % g
		}
		producers.Go(func() {
			j := 0
			for range count {
				q.Add(own[j])
				if j++; j == len(own) {
					j = 0
				}
			}
		})
	}
	producers.Wait()
	for i := range g {
		q.Add(fmt.Sprintf("%s%d", stopPrefix, i))
	}
	consumers.Wait()
	q.ShutDown()
}

// RateLimitedRetry has g producers each call AddRateLimited then Forget on
// keys from their own slice, n pairs in total, the way a controller retries
// a failed key and forgets it once it succeeds, while g consumers Get and
// Done the items as their backoff expires. It shuts the queue down when
// the producers finish.
func RateLimitedRetry(q Queue, n, g int, keys []string, start func()) {
	var consumers sync.WaitGroup
	for range g {
		consumers.Go(func() {
			for {
				item, shutdown := q.Get()
				if shutdown {
					return
				}
				q.Done(item)
			}
		})
	}
	start()
	var producers sync.WaitGroup
	span := len(keys) / g
	for p := range g {
		own := keys[p*span : (p+1)*span]
		count := n / g
		if p == 0 {
			count += n % g
		}
		producers.Go(func() {
			j := 0
			for range count {
				q.AddRateLimited(own[j])
				q.Forget(own[j])
				if j++; j == len(own) {
					j = 0
				}
			}
		})
	}
	producers.Wait()
	q.ShutDown()
	consumers.Wait()
}
