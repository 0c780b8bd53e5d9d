package workqueue

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"
)

// pAdd is one AddWithOpts call; step advances the fake clock first.
type pAdd struct {
	step  time.Duration
	item  string
	opts  AddOpts
	begin bool // instead of adding: Get item (and keep it processing)
	done  bool // instead of adding: Done(item)
}

type got struct {
	Item string
	Prio int
}

func TestPriorityRules(t *testing.T) {
	const s = time.Second
	p := func(n int) AddOpts { return AddOpts{Priority: n} }
	tests := []struct {
		name string
		adds []pAdd
		want []got // drained in this order after the adds
	}{
		{"higher priority first, FIFO within a priority",
			[]pAdd{{item: "a", opts: p(0)}, {item: "b", opts: p(5)}, {item: "c", opts: p(0)},
				{item: "d", opts: p(5)}, {item: "e", opts: p(-1)}, {item: "f", opts: p(-1)}},
			[]got{{"b", 5}, {"d", 5}, {"a", 0}, {"c", 0}, {"e", -1}, {"f", -1}}},
		{"a lower-priority re-add keeps the higher priority and place",
			[]pAdd{{item: "a", opts: p(5)}, {item: "b", opts: p(5)}, {item: "a", opts: p(1)}},
			[]got{{"a", 5}, {"b", 5}}},
		{"a raise moves the item to the end of its new priority",
			[]pAdd{{item: "x", opts: p(5)}, {item: "a", opts: p(0)}, {item: "b", opts: p(0)},
				{item: "a", opts: p(5)}, {item: "y", opts: p(5)}},
			[]got{{"x", 5}, {"a", 5}, {"y", 5}, {"b", 0}}},
		{"repeated raises leave one live entry",
			[]pAdd{{item: "a", opts: p(1)}, {item: "a", opts: p(2)}, {item: "a", opts: p(3)}, {item: "b", opts: p(2)}},
			[]got{{"a", 3}, {"b", 2}}},
		{"plain Add is priority 0 and raises a low item",
			[]pAdd{{item: "a", opts: p(-100)}, {item: "b", opts: p(-100)}, {item: "b", opts: p(0)}},
			[]got{{"b", 0}, {"a", -100}}},
		{"the earliest ready time wins",
			[]pAdd{{item: "a", opts: AddOpts{After: 5 * s}}, {item: "a", opts: AddOpts{After: s}}, {step: s}},
			[]got{{"a", 0}}},
		{"a later ready time does not postpone",
			[]pAdd{{item: "a", opts: AddOpts{After: s}}, {item: "a", opts: AddOpts{After: 5 * s}}, {step: s}},
			[]got{{"a", 0}}},
		{"priority and ready time combine independently",
			[]pAdd{{item: "a", opts: AddOpts{After: s, Priority: 3}}, {item: "a", opts: AddOpts{After: 5 * s, Priority: 7}},
				{item: "b", opts: p(5)}, {step: s}},
			[]got{{"a", 7}, {"b", 5}}},
		{"a delayed item keeps its priority when it becomes ready",
			[]pAdd{{item: "b"}, {item: "a", opts: AddOpts{After: s, Priority: 4}}, {step: s}},
			[]got{{"a", 4}, {"b", 0}}},
		{"an immediate add of a waiting item keeps its higher priority",
			[]pAdd{{item: "a", opts: AddOpts{After: time.Hour, Priority: 4}}, {item: "b", opts: p(1)}, {item: "a"}},
			[]got{{"a", 4}, {"b", 1}}},
		{"a delayed add raises a ready item's priority without delaying it",
			[]pAdd{{item: "b", opts: p(1)}, {item: "a"}, {item: "a", opts: AddOpts{After: time.Hour, Priority: 2}}},
			[]got{{"a", 2}, {"b", 1}}},
		{"adds while processing re-queue at the highest of their priorities",
			[]pAdd{{item: "a"}, {item: "a", begin: true}, {item: "a", opts: p(2)}, {item: "a", opts: p(9)},
				{item: "a", opts: p(1)}, {item: "b", opts: p(5)}, {item: "a", done: true}},
			[]got{{"a", 9}, {"b", 5}}},
		{"a new pass starts at the new add's priority",
			[]pAdd{{item: "a", opts: p(9)}, {item: "a", begin: true}, {item: "a", opts: p(1)},
				{item: "b", opts: p(5)}, {item: "a", done: true}},
			[]got{{"b", 5}, {"a", 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fc := clocktesting.NewFakeClock(time.Unix(0, 0))
				q, err := NewPriority(PriorityConfig[string]{Config: Config{Clock: fc}})
				mustNoErr(t, err)
				defer q.ShutDown()
				for _, a := range tt.adds {
					switch {
					case a.step != 0:
						fc.Step(a.step)
					case a.begin:
						if item, _, _ := q.GetWithPriority(); item != a.item {
							t.Fatalf("Get = %q, want %q", item, a.item)
						}
					case a.done:
						q.Done(a.item)
					default:
						q.AddWithOpts(a.opts, a.item)
					}
					synctest.Wait()
					mustCheck(t, &q.e)
				}
				var gots []got
				for q.Len() > 0 {
					item, prio, _ := q.GetWithPriority()
					gots = append(gots, got{item, prio})
					q.Done(item)
					mustCheck(t, &q.e)
				}
				if diff := cmp.Diff(tt.want, gots); diff != "" {
					t.Fatalf("handed out (-want +got):\n%s", diff)
				}
			})
		})
	}
}

func TestPriorityRateLimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fc := clocktesting.NewFakeClock(time.Unix(0, 0))
		exp, err := NewExponentialLimiter[string](ExponentialConfig{Base: time.Second, Max: time.Hour})
		mustNoErr(t, err)
		q, err := NewPriority(PriorityConfig[string]{Config: Config{Clock: fc}, RateLimiter: exp})
		mustNoErr(t, err)
		defer q.ShutDown()

		q.AddWithOpts(AddOpts{RateLimited: true, Priority: 2}, "a", "b") // 1s each
		synctest.Wait()
		if q.NumRequeues("a") != 1 || q.NumRequeues("b") != 1 || q.Len() != 0 {
			t.Fatalf("NumRequeues a=%d b=%d Len=%d", q.NumRequeues("a"), q.NumRequeues("b"), q.Len())
		}
		q.AddWithOpts(AddOpts{RateLimited: true, After: 500 * time.Millisecond}, "c") // limiter says 1s: 500ms wins
		synctest.Wait()
		fc.Step(500 * time.Millisecond)
		synctest.Wait()
		if item, prio, _ := q.GetWithPriority(); item != "c" || prio != 0 {
			t.Fatalf("Get = %q %d, want c 0", item, prio)
		}
		q.Done("c")
		fc.Step(500 * time.Millisecond)
		synctest.Wait()
		var items []string
		for q.Len() > 0 {
			item, prio, _ := q.GetWithPriority()
			if prio != 2 {
				t.Errorf("%s came out at priority %d, want 2", item, prio)
			}
			items = append(items, item)
			q.Done(item)
		}
		if diff := cmp.Diff([]string{"a", "b"}, items); diff != "" {
			t.Errorf("items (-want +got):\n%s", diff)
		}
		q.AddRateLimited("a") // second failure: 2s, at priority 0
		q.Forget("b")
		if q.NumRequeues("a") != 2 || q.NumRequeues("b") != 0 {
			t.Errorf("NumRequeues a=%d b=%d, want 2 and 0", q.NumRequeues("a"), q.NumRequeues("b"))
		}
		q.ShutDown()
		q.AddWithOpts(AddOpts{RateLimited: true}, "z")
		if q.NumRequeues("z") != 0 {
			t.Error("AddWithOpts after ShutDown counted a failure")
		}
	})
}

func TestPriorityManyLevels(t *testing.T) {
	q, err := NewPriority(PriorityConfig[string]{})
	mustNoErr(t, err)
	defer q.ShutDown()
	// Interleave priorities so levels are created, emptied and dropped.
	for round := range 3 {
		for i := range 40 {
			prio := (i * 7) % 40
			q.AddWithOpts(AddOpts{Priority: prio}, fmt.Sprintf("r%d-i%d", round, prio))
		}
		mustCheck(t, &q.e)
		for want := 39; want >= 0; want-- {
			item, prio, _ := q.GetWithPriority()
			if prio != want || item != fmt.Sprintf("r%d-i%d", round, want) {
				t.Fatalf("round %d: got %s at %d, want priority %d", round, item, prio, want)
			}
			q.Done(item)
			mustCheck(t, &q.e)
		}
		if n := len(q.e.levels); n > maxIdleLevels {
			t.Fatalf("%d empty levels kept, want at most %d", n, maxIdleLevels)
		}
	}
}
