package workqueue

import (
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"
)

// delayOp is one step of a delaying-queue script.
type delayOp struct {
	add   string        // AddAfter(add, after) when set
	after time.Duration //
	now   string        // Add(now) when set
	step  time.Duration // advance the fake clock
	get   []string      // Get and Done these items, in this order
	begin string        // Get this item and keep it processing
	done  string        // Done(done)
	len   int           // expected Len after the step (-1: skip)
	shut  bool          // ShutDown
}

func TestDelayingRules(t *testing.T) {
	const s = time.Second
	tests := []struct {
		name string
		ops  []delayOp
	}{
		{"zero and negative delays add at once", []delayOp{
			{add: "a", after: 0, len: 1},
			{add: "b", after: -s, len: 2},
			{get: []string{"a", "b"}, len: 0},
		}},
		{"an item is ready exactly at its time", []delayOp{
			{add: "a", after: s, len: 0},
			{step: s - 1, len: 0},
			{step: 1, len: 1},
			{get: []string{"a"}, len: 0},
		}},
		{"items become ready in ready-time order", []delayOp{
			{add: "a", after: 3 * s, len: 0},
			{add: "b", after: s, len: 0},
			{add: "c", after: 2 * s, len: 0},
			{add: "d", after: 2 * s, len: 0},
			{step: 3 * s, len: 4},
			{get: []string{"b", "c", "d", "a"}, len: 0},
		}},
		{"re-adding with a later time keeps the earlier one", []delayOp{
			{add: "a", after: s, len: 0},
			{add: "a", after: 5 * s, len: 0},
			{step: s, len: 1},
			{get: []string{"a"}, len: 0},
			{step: 10 * s, len: 0},
		}},
		{"re-adding with an earlier time moves it up", []delayOp{
			{add: "a", after: 5 * s, len: 0},
			{add: "b", after: 2 * s, len: 0},
			{add: "a", after: s, len: 0},
			{step: s, len: 1},
			{get: []string{"a"}, len: 0},
			{step: s, len: 1},
			{get: []string{"b"}, len: 0},
			{step: 10 * s, len: 0},
		}},
		{"an Add makes a waiting item ready now and its delayed add still comes, as client-go", []delayOp{
			{add: "a", after: s, len: 0},
			{now: "a", len: 1},
			{get: []string{"a"}, len: 0},
			{step: s, len: 1},
			{get: []string{"a"}, len: 0},
		}},
		{"a delayed add of a ready item is not absorbed: it adds the item again once processed, as client-go", []delayOp{
			{now: "a", len: 1},
			{add: "a", after: s, len: 1},
			{get: []string{"a"}, len: 0},
			{step: s, len: 1},
			{get: []string{"a"}, len: 0},
			{step: s, len: 0},
		}},
		{"a delayed add due while the item is still ready adds nothing more, as client-go", []delayOp{
			{now: "a", len: 1},
			{add: "a", after: s, len: 1},
			{step: s, len: 1},
			{get: []string{"a"}, len: 0},
			{step: s, len: 0},
		}},
		{"a delayed add made while processing comes after Done, as client-go", []delayOp{
			{now: "a", len: 1},
			{begin: "a", len: 0},
			{now: "a", len: 0},
			{add: "a", after: s, len: 0},
			{done: "a", len: 1},
			{get: []string{"a"}, len: 0},
			{step: s, len: 1},
			{get: []string{"a"}, len: 0},
		}},
		{"an item due while processing is queued on Done", []delayOp{
			{now: "a", len: 1},
			{begin: "a", len: 0},
			{add: "a", after: s, len: 0},
			{step: s, len: 0},
			{done: "a", len: 1},
			{get: []string{"a"}, len: 0},
		}},
		{"an item still waiting at Done stays waiting", []delayOp{
			{now: "a", len: 1},
			{begin: "a", len: 0},
			{add: "a", after: s, len: 0},
			{done: "a", len: 0},
			{step: s, len: 1},
			{get: []string{"a"}, len: 0},
		}},
		{"the longest delay neither wraps nor fires", []delayOp{
			{add: "a", after: math.MaxInt64, len: 0},
			{step: 100 * 365 * 24 * time.Hour, len: 0},
			{add: "a", after: s, len: 0},
			{step: s, len: 1},
			{get: []string{"a"}, len: 0},
		}},
		{"ShutDown drops waiting items", []delayOp{
			{add: "a", after: s, len: 0},
			{now: "b", len: 1},
			{shut: true, len: 1},
			{step: s, len: 1},
			{get: []string{"b"}, len: 0},
		}},
		{"delayed adds after ShutDown are ignored", []delayOp{
			{shut: true, len: 0},
			{add: "a", after: 0, len: 0},
			{add: "b", after: s, len: 0},
			{step: s, len: 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fc := clocktesting.NewFakeClock(time.Unix(0, 0))
				q, err := NewDelaying[string](Config{Clock: fc})
				mustNoErr(t, err)
				defer q.ShutDown()
				for i, op := range tt.ops {
					switch {
					case op.add != "":
						q.AddAfter(op.add, op.after)
					case op.now != "":
						q.Add(op.now)
					case op.step != 0:
						fc.Step(op.step)
					case op.get != nil:
						var got []string
						for range op.get {
							if q.Len() == 0 {
								t.Fatalf("op %d: queue empty, want %v", i, op.get)
							}
							item, _ := q.Get()
							got = append(got, item)
							q.Done(item)
						}
						if diff := cmp.Diff(op.get, got); diff != "" {
							t.Fatalf("op %d: got (-want +got):\n%s", i, diff)
						}
					case op.begin != "":
						if item, _ := q.Get(); item != op.begin {
							t.Fatalf("op %d: Get = %q, want %q", i, item, op.begin)
						}
					case op.done != "":
						q.Done(op.done)
					case op.shut:
						q.ShutDown()
					}
					synctest.Wait() // let the timer goroutine catch up
					mustCheck(t, &q.e)
					if got := q.Len(); got != op.len {
						t.Fatalf("op %d %+v: Len = %d, want %d", i, op, got, op.len)
					}
				}
			})
		})
	}
}

func TestDelayingTimerGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fc := clocktesting.NewFakeClock(time.Unix(0, 0))
		q, err := NewDelaying[string](Config{Clock: fc})
		mustNoErr(t, err)
		q.Add("a")
		if q.e.loopStarted || fc.HasWaiters() {
			t.Fatal("an undelayed add started the timer goroutine")
		}
		q.AddAfter("b", time.Minute)
		synctest.Wait()
		if got := fc.Waiters(); got != 1 {
			t.Fatalf("fake clock has %d waiters, want the one timer", got)
		}
		q.AddAfter("c", time.Second) // earlier: the timer is re-armed
		synctest.Wait()
		if got := fc.Waiters(); got != 1 {
			t.Fatalf("fake clock has %d waiters after re-arming, want 1", got)
		}
		q.ShutDown()
		if fc.HasWaiters() {
			t.Fatal("ShutDown left a timer armed")
		}
		// goleak in TestMain checks the goroutine is gone.
	})
}

func TestDelayingRealClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, err := NewDelaying[string](Config{})
		mustNoErr(t, err)
		defer q.ShutDown()
		start := time.Now()
		q.AddAfter("a", time.Hour)
		q.AddAfter("b", time.Minute)
		for _, want := range []string{"b", "a"} {
			item, _ := q.Get()
			if item != want {
				t.Fatalf("Get = %q, want %q", item, want)
			}
			q.Done(item)
		}
		if got := time.Since(start); got != time.Hour {
			t.Fatalf("items took %v, want 1h of bubble time", got)
		}
	})
}
