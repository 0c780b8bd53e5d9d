package workqueue

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"
)

// kinds lists every queue type, so the rules shared by all are checked on
// each of them.
var kinds = []struct {
	name string
	new  func(tb testing.TB, cfg Config) (Interface[string], *engine[string])
}{
	{"Queue", func(tb testing.TB, cfg Config) (Interface[string], *engine[string]) {
		q, err := New[string](cfg)
		mustNoErr(tb, err)
		tb.Cleanup(q.ShutDown)
		return q, &q.e
	}},
	{"DelayingQueue", func(tb testing.TB, cfg Config) (Interface[string], *engine[string]) {
		q, err := NewDelaying[string](cfg)
		mustNoErr(tb, err)
		tb.Cleanup(q.ShutDown)
		return q, &q.e
	}},
	{"RateLimitingQueue", func(tb testing.TB, cfg Config) (Interface[string], *engine[string]) {
		q, err := NewRateLimiting(RateLimitingConfig[string]{Config: cfg})
		mustNoErr(tb, err)
		tb.Cleanup(q.ShutDown)
		return q, &q.e
	}},
	{"PriorityQueue", func(tb testing.TB, cfg Config) (Interface[string], *engine[string]) {
		q, err := NewPriority(PriorityConfig[string]{Config: cfg})
		mustNoErr(tb, err)
		tb.Cleanup(q.ShutDown)
		return q, &q.e
	}},
}

func mustNoErr(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// ops is a tiny script language for single-goroutine queue tests: "+a" adds
// a, "-a" gets an item and expects a, "=a" calls Done(a), "#n" expects Len n,
// "!" shuts down, "." expects Get to report shutdown.
func runOps(t *testing.T, q Interface[string], e *engine[string], ops []string) {
	t.Helper()
	for i, op := range ops {
		arg := op[1:]
		switch op[0] {
		case '+':
			q.Add(arg)
		case '-':
			if q.Len() == 0 {
				t.Fatalf("op %d %q: queue is empty, Get would block", i, op)
			}
			got, shutdown := q.Get()
			if got != arg || shutdown {
				t.Fatalf("op %d %q: Get = %q, %v; want %q, false", i, op, got, shutdown, arg)
			}
		case '=':
			q.Done(arg)
		case '#':
			want := int(arg[0] - '0')
			if got := q.Len(); got != want {
				t.Fatalf("op %d %q: Len = %d, want %d", i, op, got, want)
			}
		case '!':
			q.ShutDown()
		case '.':
			got, shutdown := q.Get()
			if !shutdown || got != "" {
				t.Fatalf("op %d %q: Get = %q, %v; want shutdown", i, op, got, shutdown)
			}
		default:
			t.Fatalf("bad op %q", op)
		}
		mustCheck(t, e)
	}
}

func TestQueueRules(t *testing.T) {
	tests := []struct {
		name string
		ops  []string
	}{
		{"items come out in the order they were added",
			[]string{"+a", "+b", "+c", "#3", "-a", "-b", "-c", "#0"}},
		{"an item added several times before processing is processed once",
			[]string{"+a", "+b", "+a", "+a", "+b", "#2", "-a", "-b", "#0", "=a", "=b", "#0"}},
		{"an item added while processing is not handed out until Done",
			[]string{"+a", "-a", "+a", "#0", "=a", "#1", "-a", "=a", "#0"}},
		{"an item re-queued by Done goes to the back",
			[]string{"+a", "-a", "+a", "+b", "=a", "-b", "-a"}},
		{"many adds while processing give one more pass",
			[]string{"+a", "-a", "+a", "+a", "+a", "=a", "#1", "-a", "=a", "#0"}},
		{"Done for an item not being processed is a no-op",
			[]string{"=x", "+a", "=a", "#1", "-a", "=a", "=a", "#0"}},
		{"an item can be processed again after Done",
			[]string{"+a", "-a", "=a", "+a", "-a", "=a", "#0"}},
		{"the empty key is an ordinary item",
			[]string{"+", "+", "#1", "-", "="}},
		{"adds after ShutDown are ignored",
			[]string{"!", "+a", "#0", "."}},
		{"ready items are still handed out after ShutDown",
			[]string{"+a", "+b", "!", "#2", "-a", "-b", ".", "."}},
		{"Done after ShutDown re-queues an item added before it",
			[]string{"+a", "-a", "+a", "!", "+b", "=a", "-a", "=a", "."}},
		{"ShutDown is idempotent",
			[]string{"+a", "!", "!", "-a", "."}},
	}
	for _, kind := range kinds {
		for _, tt := range tests {
			t.Run(kind.name+"/"+tt.name, func(t *testing.T) {
				q, e := kind.new(t, Config{})
				runOps(t, q, e, tt.ops)
			})
		}
	}
}

func TestShuttingDown(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind.name, func(t *testing.T) {
			q, _ := kind.new(t, Config{})
			if q.ShuttingDown() {
				t.Fatal("ShuttingDown before ShutDown")
			}
			q.ShutDown()
			if !q.ShuttingDown() {
				t.Fatal("not ShuttingDown after ShutDown")
			}
		})
	}
}

type getResult struct {
	item     string
	shutdown bool
}

// asyncGet calls Get in a new goroutine and delivers its result.
func asyncGet(q Interface[string]) <-chan getResult {
	ch := make(chan getResult, 1)
	go func() {
		item, shutdown := q.Get()
		ch <- getResult{item, shutdown}
	}()
	return ch
}

func received[T any](ch <-chan T) (T, bool) {
	select {
	case v := <-ch:
		return v, true
	default:
		var zero T
		return zero, false
	}
}

func TestBlockingGet(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind.name+"/Get blocks until an item is added", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q, e := kind.new(t, Config{})
				res := asyncGet(q)
				synctest.Wait()
				if r, ok := received(res); ok {
					t.Fatalf("Get returned %+v on an empty queue", r)
				}
				q.Add("a")
				synctest.Wait()
				r, ok := received(res)
				if !ok || r != (getResult{"a", false}) {
					t.Fatalf("Get = %+v, %v; want a", r, ok)
				}
				mustCheck(t, e)
			})
		})
		t.Run(kind.name+"/blocked Gets are served in call order", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q, _ := kind.new(t, Config{})
				first := asyncGet(q)
				synctest.Wait()
				second := asyncGet(q)
				synctest.Wait()
				q.Add("a")
				synctest.Wait()
				if r, ok := received(first); !ok || r.item != "a" {
					t.Fatalf("first Get = %+v, %v; want a", r, ok)
				}
				q.Add("b")
				synctest.Wait()
				if r, ok := received(second); !ok || r.item != "b" {
					t.Fatalf("second Get = %+v, %v; want b", r, ok)
				}
			})
		})
		t.Run(kind.name+"/ShutDown wakes every blocked Get", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q, _ := kind.new(t, Config{})
				var results []<-chan getResult
				for range 3 {
					results = append(results, asyncGet(q))
				}
				synctest.Wait()
				q.ShutDown()
				synctest.Wait()
				for i, res := range results {
					if r, ok := received(res); !ok || !r.shutdown {
						t.Fatalf("Get %d = %+v, %v; want shutdown", i, r, ok)
					}
				}
			})
		})
		t.Run(kind.name+"/an item added while processing is not given to a blocked Get", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q, e := kind.new(t, Config{})
				q.Add("a")
				if item, _ := q.Get(); item != "a" {
					t.Fatalf("Get = %q", item)
				}
				res := asyncGet(q)
				synctest.Wait()
				q.Add("a")
				synctest.Wait()
				if r, ok := received(res); ok {
					t.Fatalf("second worker got %+v while a was being processed", r)
				}
				mustCheck(t, e)
				q.Done("a")
				synctest.Wait()
				if r, ok := received(res); !ok || r.item != "a" {
					t.Fatalf("Get after Done = %+v, %v; want a", r, ok)
				}
			})
		})
	}
}

func TestShutDownWithDrain(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind.name+"/waits for the items handed out, as client-go", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q, e := kind.new(t, Config{})
				q.Add("a")
				q.Add("b")
				q.Add("c")
				if item, _ := q.Get(); item != "a" {
					t.Fatalf("Get = %q", item)
				}
				q.Add("a") // dirty while processing: must be processed again
				drained := make(chan struct{})
				go func() {
					q.ShutDownWithDrain()
					close(drained)
				}()
				synctest.Wait()
				step := func(what string, wantDone bool) {
					t.Helper()
					synctest.Wait()
					mustCheck(t, e)
					if _, done := received(drained); done != wantDone {
						t.Fatalf("after %s: drain finished = %v, want %v", what, done, wantDone)
					}
				}
				step("start", false)
				q.Add("d") // ignored: shutting down
				var got []string
				item, shutdown := q.Get()
				if shutdown {
					t.Fatal("Get reported shutdown with b ready")
				}
				got = append(got, item)
				q.Done("a") // re-queues a; b is still out
				step("Done a", false)
				q.Done(item)
				// Nothing is out any more: c and a are ready but never
				// taken, which does not hold the drain (client-go).
				step("Done "+item, true)
				for range 2 {
					item, shutdown := q.Get()
					if shutdown {
						t.Fatal("Get reported shutdown with items ready")
					}
					got = append(got, item)
					q.Done(item)
				}
				if diff := cmp.Diff([]string{"b", "c", "a"}, got); diff != "" {
					t.Fatalf("processed (-want +got):\n%s", diff)
				}
				if _, shutdown := q.Get(); !shutdown {
					t.Fatal("Get after drain did not report shutdown")
				}
			})
		})
		t.Run(kind.name+"/items never taken do not hold it, as client-go", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q, _ := kind.new(t, Config{})
				q.Add("a")
				q.Add("b")
				drained := make(chan struct{})
				go func() {
					q.ShutDownWithDrain() // the workers are gone: must not hang
					close(drained)
				}()
				synctest.Wait()
				if _, done := received(drained); !done {
					t.Fatal("ShutDownWithDrain waits for items no worker took")
				}
				if q.Len() != 2 {
					t.Fatalf("Len = %d, want the 2 items still ready", q.Len())
				}
			})
		})
		t.Run(kind.name+"/returns at once when idle", func(t *testing.T) {
			q, _ := kind.new(t, Config{})
			q.ShutDownWithDrain()
			q.ShutDownWithDrain()
		})
		t.Run(kind.name+"/ShutDown ends the wait", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q, _ := kind.new(t, Config{})
				q.Add("a")
				q.Get()
				drained := make(chan struct{})
				go func() {
					q.ShutDownWithDrain()
					close(drained)
				}()
				synctest.Wait()
				if _, done := received(drained); done {
					t.Fatal("drain finished with a being processed")
				}
				q.ShutDown()
				synctest.Wait()
				if _, done := received(drained); !done {
					t.Fatal("ShutDown did not end the drain wait")
				}
				q.Done("a")
			})
		})
	}
}

func TestConfigValidation(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr bool
	}{
		{"zero value", Config{}, false},
		{"name without metrics", Config{Name: "q"}, false},
		{"metrics with name", Config{Name: "q", Metrics: &fakeMetrics{}}, false},
		{"metrics without name", Config{Metrics: &fakeMetrics{}}, true},
		{"negative metrics period", Config{MetricsUpdatePeriod: -time.Second}, true},
		{"fake clock", Config{Clock: clocktesting.NewFakeClock(time.Unix(0, 0))}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := []error{}
			q1, err := New[string](tt.cfg)
			errs = append(errs, err)
			q2, err := NewDelaying[string](tt.cfg)
			errs = append(errs, err)
			q3, err := NewRateLimiting(RateLimitingConfig[string]{Config: tt.cfg})
			errs = append(errs, err)
			q4, err := NewPriority(PriorityConfig[string]{Config: tt.cfg})
			errs = append(errs, err)
			for i, err := range errs {
				if (err != nil) != tt.wantErr {
					t.Errorf("constructor %d: err = %v, want error %v", i, err, tt.wantErr)
				}
			}
			if !tt.wantErr {
				q1.ShutDown()
				q2.ShutDown()
				q3.ShutDown()
				q4.ShutDown()
			}
		})
	}
}
