package workqueue_test

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/kplane/kplane/pkg/workqueue"
	"github.com/prometheus/client_golang/prometheus"
	clocktesting "k8s.io/utils/clock/testing"
)

// The canonical controller worker loop: take a key, sync it, forget it on
// success, retry it with backoff on failure up to a limit, always call Done.
func Example() {
	// Retry at once for the example; controllers keep the default limiter.
	limiter, err := workqueue.NewFastSlowLimiter[string](workqueue.FastSlowConfig{FastAttempts: 5, Slow: time.Second})
	if err != nil {
		panic(err)
	}
	q, err := workqueue.NewRateLimiting(workqueue.RateLimitingConfig[string]{RateLimiter: limiter})
	if err != nil {
		panic(err)
	}

	const maxRetries = 3
	var (
		mu       sync.Mutex
		attempts = map[string]int{}
		finished sync.WaitGroup // one per key, for the example only
	)
	syncHandler := func(key string) error {
		mu.Lock()
		defer mu.Unlock()
		attempts[key]++
		switch {
		case key == "default/flaky" && attempts[key] < 3:
			return errors.New("transient failure")
		case key == "default/broken":
			return errors.New("permanent failure")
		}
		return nil
	}
	processNextItem := func() bool {
		key, shutdown := q.Get()
		if shutdown {
			return false
		}
		defer q.Done(key)
		err := syncHandler(key)
		switch {
		case err == nil:
			q.Forget(key)
		case q.NumRequeues(key) < maxRetries:
			q.AddRateLimited(key)
			return true
		default:
			q.Forget(key) // give up on it
		}
		finished.Done()
		return true
	}

	keys := []string{"default/web", "default/flaky", "default/broken"}
	finished.Add(len(keys))
	for _, key := range keys {
		q.Add(key)
	}
	var workers sync.WaitGroup
	for range 2 {
		workers.Go(func() {
			for processNextItem() {
			}
		})
	}
	finished.Wait()
	q.ShutDown()
	workers.Wait()
	for _, key := range keys {
		fmt.Println(key, attempts[key])
	}
	// Output:
	// default/web 1
	// default/flaky 3
	// default/broken 4
}

// Initial-list events go in at low priority, real changes at the default
// priority, so fresh changes are handled first.
func ExamplePriorityQueue() {
	q, err := workqueue.NewPriority(workqueue.PriorityConfig[string]{})
	if err != nil {
		panic(err)
	}
	defer q.ShutDown()
	const lowPriority = -100
	q.AddWithOpts(workqueue.AddOpts{Priority: lowPriority}, "default/a", "default/b")
	q.Add("default/c")
	q.AddWithOpts(workqueue.AddOpts{Priority: lowPriority}, "default/c") // keeps priority 0
	for q.Len() > 0 {
		key, prio, _ := q.GetWithPriority()
		fmt.Println(key, prio)
		q.Done(key)
	}
	// Output:
	// default/c 0
	// default/a -100
	// default/b -100
}

// Export queue metrics to Prometheus under the names Kubernetes uses.
func ExamplePrometheusMetrics() {
	reg := prometheus.NewRegistry()
	metrics, err := workqueue.NewPrometheusMetrics(workqueue.PrometheusConfig{Registerer: reg})
	if err != nil {
		panic(err)
	}
	q, err := workqueue.NewRateLimiting(workqueue.RateLimitingConfig[string]{
		Config: workqueue.Config{Name: "deployments", Metrics: metrics},
	})
	if err != nil {
		panic(err)
	}
	defer q.ShutDown()
	q.Add("default/web")
	q.Add("default/api")

	families, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, f := range families {
		if f.GetName() == "workqueue_depth" {
			m := f.GetMetric()[0]
			fmt.Println(f.GetName(), m.GetLabel()[0].GetValue(), m.GetGauge().GetValue())
		}
	}
	// Output:
	// workqueue_depth deployments 2
}

// Delays run on the injected clock: a test steps a fake clock instead of
// sleeping.
func ExampleDelayingQueue() {
	fc := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	q, err := workqueue.NewDelaying[string](workqueue.Config{Clock: fc})
	if err != nil {
		panic(err)
	}
	defer q.ShutDown()
	q.AddAfter("default/later", 2*time.Minute)
	q.AddAfter("default/sooner", time.Minute)
	q.AddAfter("default/sooner", time.Hour) // the earlier ready time wins
	fmt.Println("ready now:", q.Len())

	fc.Step(time.Minute)
	item, _ := q.Get() // blocks until the timer has made it ready
	fmt.Println(item)
	q.Done(item)

	fc.Step(time.Minute)
	item, _ = q.Get()
	fmt.Println(item)
	q.Done(item)
	// Output:
	// ready now: 0
	// default/sooner
	// default/later
}
