package workqueue

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

var seedFlag = flag.Uint64("workqueue.seed", 0, "seed for the randomized queue tests (0: pick one)")

// stressQueue is what the randomized test drives: a rate-limiting queue with
// an optional priority.
type stressQueue interface {
	RateLimitingInterface[int]
	add(item, prio int)
}

type rlStress struct{ *RateLimitingQueue[int] }

func (q rlStress) add(item, _ int) { q.Add(item) }

type pqStress struct{ *PriorityQueue[int] }

func (q pqStress) add(item, prio int) { q.AddWithOpts(AddOpts{Priority: prio}, item) }

// TestRandomizedInvariants runs producers and consumers against a queue with
// random adds, delayed adds, rate-limited retries and priorities, and checks
// that no item is ever processed by two consumers at once, that every item
// is processed at least once after its last add, that the internal
// bookkeeping stays consistent, and that ShutDownWithDrain loses nothing.
func TestRandomizedInvariants(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -workqueue.seed=%d)", seed, seed)
	producers, consumers, opsPer, keys := 4, 4, 20000, 64
	if testing.Short() {
		opsPer = 500
	}
	for i, kind := range []string{"RateLimitingQueue", "PriorityQueue"} {
		t.Run(kind, func(t *testing.T) {
			runStress(t, seed+uint64(i), kind == "PriorityQueue", producers, consumers, opsPer, keys)
		})
	}
}

func runStress(t *testing.T, seed uint64, priority bool, producers, consumers, opsPer, keys int) {
	fc := clocktesting.NewFakeClock(time.Unix(0, 0))
	limiter, err := NewExponentialLimiter[int](ExponentialConfig{Base: time.Millisecond, Max: 50 * time.Millisecond})
	mustNoErr(t, err)
	cfg := Config{Clock: fc}
	var (
		q stressQueue
		e *engine[int]
	)
	if priority {
		pq, err := NewPriority(PriorityConfig[int]{Config: cfg, RateLimiter: limiter})
		mustNoErr(t, err)
		q, e = pqStress{pq}, &pq.e
	} else {
		rq, err := NewRateLimiting(RateLimitingConfig[int]{Config: cfg, RateLimiter: limiter})
		mustNoErr(t, err)
		q, e = rlStress{rq}, &rq.e
	}
	defer q.ShutDown()

	var (
		stamp     atomic.Int64 // orders adds and gets
		lastAdd   = make([]atomic.Int64, keys)
		lastGet   = make([]atomic.Int64, keys)
		busy      = make([]atomic.Bool, keys)
		processed atomic.Int64
		failures  = make(chan string, 1)
	)
	fail := func(format string, args ...any) {
		select {
		case failures <- fmt.Sprintf(format, args...):
		default:
		}
	}
	// noteAdd records an add that is about to happen. The Get that serves it
	// returns after the add, so it gets a larger stamp.
	noteAdd := func(k int) {
		s := stamp.Add(1)
		for {
			old := lastAdd[k].Load()
			if old >= s || lastAdd[k].CompareAndSwap(old, s) {
				return
			}
		}
	}

	var consumerWG sync.WaitGroup
	for c := range consumers {
		r := rand.New(rand.NewPCG(seed, uint64(1000+c)))
		consumerWG.Go(func() {
			for {
				k, shutdown := q.Get()
				if shutdown {
					return
				}
				if !busy[k].CompareAndSwap(false, true) {
					fail("item %d handed to two consumers at once", k)
				}
				s := stamp.Add(1)
				for {
					old := lastGet[k].Load()
					if old >= s || lastGet[k].CompareAndSwap(old, s) {
						break
					}
				}
				processed.Add(1)
				if r.IntN(4) == 0 {
					runtime.Gosched()
				}
				switch r.IntN(10) {
				case 0: // fail: retry later
					noteAdd(k)
					q.AddRateLimited(k)
				case 1: // changed again while being processed
					noteAdd(k)
					q.add(k, r.IntN(3))
				default:
					q.Forget(k)
				}
				busy[k].Store(false)
				q.Done(k)
			}
		})
	}

	var producerWG sync.WaitGroup
	for p := range producers {
		r := rand.New(rand.NewPCG(seed, uint64(p)))
		producerWG.Go(func() {
			for range opsPer {
				k := r.IntN(keys)
				noteAdd(k)
				switch r.IntN(6) {
				case 0:
					q.AddAfter(k, time.Duration(r.IntN(20))*time.Millisecond)
				case 1:
					q.AddRateLimited(k)
				default:
					q.add(k, r.IntN(5)-2)
				}
				if r.IntN(8) == 0 {
					runtime.Gosched()
				}
			}
		})
	}
	producersDone := make(chan struct{})
	go func() {
		producerWG.Wait()
		close(producersDone)
	}()
	// Drive the fake clock and check the bookkeeping while the work runs.
	for running := true; running; {
		select {
		case <-producersDone:
			running = false
		default:
		}
		fc.Step(time.Millisecond)
		if err := e.checkInvariants(); err != nil {
			t.Fatalf("invariant broken: %v", err)
		}
		runtime.Gosched()
	}
	// Consumers still retry items, which may wait up to 50ms: keep making
	// time pass until no delayed item is left and nothing is in flight.
	for {
		fc.Step(time.Hour)
		e.promoteDue()
		e.mu.Lock()
		idle := len(e.delayed) == 0 && e.nready == 0 && e.nprocessing == 0
		e.mu.Unlock()
		if idle {
			break
		}
		runtime.Gosched()
	}
	q.ShutDownWithDrain()
	consumerWG.Wait()
	select {
	case f := <-failures:
		t.Fatal(f)
	default:
	}
	mustCheck(t, e)
	if n := len(e.items); n != 0 {
		t.Fatalf("%d items still tracked after the drain", n)
	}
	for k := range keys {
		a, g := lastAdd[k].Load(), lastGet[k].Load()
		if a != 0 && g < a {
			t.Errorf("item %d last added at stamp %d but last processed at %d", k, a, g)
		}
	}
	t.Logf("%d items processed", processed.Load())
}

// TestDrainLosesNothing shuts a queue down with drain while producers and
// consumers run, and checks that every add accepted before the shutdown is
// processed by consumers that keep calling Get until it reports shutdown.
// ShutDownWithDrain itself waits only for the items already handed out
// (as client-go's does; see Interface.ShutDownWithDrain), so ready items
// may still be taken after it returns.
func TestDrainLosesNothing(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -workqueue.seed=%d)", seed, seed)
	q, err := New[int](Config{})
	mustNoErr(t, err)
	const keys, producers, consumers = 32, 3, 3
	var (
		mu      sync.Mutex
		pending = map[int]bool{} // added and not yet processed since
		adds    atomic.Int64
		wg      sync.WaitGroup
	)
	for c := range consumers {
		r := rand.New(rand.NewPCG(seed, uint64(c)))
		wg.Go(func() {
			for {
				k, shutdown := q.Get()
				if shutdown {
					return
				}
				mu.Lock()
				delete(pending, k)
				mu.Unlock()
				if r.IntN(3) == 0 {
					runtime.Gosched()
				}
				q.Done(k)
			}
		})
	}
	stop := make(chan struct{})
	var pwg sync.WaitGroup
	for p := range producers {
		r := rand.New(rand.NewPCG(seed, uint64(100+p)))
		pwg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				k := r.IntN(keys)
				// Hold mu so a concurrent Get cannot clear the mark before
				// the add lands, and so adds and the shutdown are ordered.
				mu.Lock()
				if !q.ShuttingDown() {
					pending[k] = true
					q.Add(k)
					adds.Add(1)
				}
				mu.Unlock()
			}
		})
	}
	// Let some work happen, then shut down with drain.
	for adds.Load() < 2000 {
		runtime.Gosched()
	}
	mu.Lock()
	shut := make(chan struct{})
	go func() {
		q.ShutDownWithDrain()
		close(shut)
	}()
	for !q.ShuttingDown() {
		runtime.Gosched()
	}
	mu.Unlock()
	<-shut
	close(stop)
	pwg.Wait()
	wg.Wait()
	mu.Lock()
	left := len(pending)
	mu.Unlock()
	if left != 0 {
		t.Fatalf("%d added items were never processed: Get reported shutdown with them still queued", left)
	}
}

// TestNoLostWakeups keeps many consumers mostly blocked while few items
// trickle in, the pattern where a missed wake-up would strand a ready item
// with every consumer asleep. The invariant check catches that state:
// blocked waiters while more items are ready than waiters were woken.
func TestNoLostWakeups(t *testing.T) {
	q, err := New[int](Config{})
	mustNoErr(t, err)
	const consumers, producers, perProducer = 16, 2, 3
	rounds := 300
	if testing.Short() {
		rounds = 50
	}
	var processed atomic.Int64
	var wg sync.WaitGroup
	for range consumers {
		wg.Go(func() {
			for {
				k, shutdown := q.Get()
				if shutdown {
					return
				}
				processed.Add(1)
				q.Done(k)
			}
		})
	}
	want := int64(0)
	for round := range rounds {
		var pwg sync.WaitGroup
		for p := range producers {
			pwg.Go(func() {
				for i := range perProducer {
					q.Add((round*producers+p)*perProducer + i)
				}
			})
		}
		pwg.Wait()
		want += producers * perProducer
		for processed.Load() < want {
			mustCheck(t, &q.e)
			runtime.Gosched()
		}
	}
	q.ShutDown()
	wg.Wait()
	mustCheck(t, &q.e)
}
