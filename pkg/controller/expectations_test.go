package controller

import (
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"
)

func newTestExpectations(t testing.TB) (*Expectations, *clocktesting.FakePassiveClock) {
	t.Helper()
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	e, err := NewExpectations(ExpectationsConfig{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return e, clk
}

func TestExpectationsConfig(t *testing.T) {
	if _, err := NewExpectations(ExpectationsConfig{TTL: -time.Second}); err == nil {
		t.Fatal("negative ttl accepted")
	}
	e, err := NewExpectations(ExpectationsConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if e.ttl != DefaultExpectationsTTL {
		t.Fatalf("default ttl = %v, want %v", e.ttl, DefaultExpectationsTTL)
	}
}

func TestExpectationsSatisfied(t *testing.T) {
	type step func(e *Expectations, clk *clocktesting.FakePassiveClock)
	const key = "ns/rs"
	tests := []struct {
		name      string
		steps     []step
		satisfied bool
		add, del  int64
		exists    bool
	}{
		{name: "absent", satisfied: true},
		{
			name:  "creations outstanding",
			steps: []step{func(e *Expectations, _ *clocktesting.FakePassiveClock) { e.ExpectCreations(key, 2) }},
			add:   2, exists: true,
		},
		{
			name: "creations partly observed",
			steps: []step{
				func(e *Expectations, _ *clocktesting.FakePassiveClock) { e.ExpectCreations(key, 2) },
				func(e *Expectations, _ *clocktesting.FakePassiveClock) { e.CreationObserved(key) },
			},
			add: 1, exists: true,
		},
		{
			name: "creations all observed",
			steps: []step{
				func(e *Expectations, _ *clocktesting.FakePassiveClock) { e.ExpectCreations(key, 2) },
				func(e *Expectations, _ *clocktesting.FakePassiveClock) { e.CreationObserved(key) },
				func(e *Expectations, _ *clocktesting.FakePassiveClock) { e.CreationObserved(key) },
			},
			satisfied: true, exists: true,
		},
		{
			name: "more observed than expected",
			steps: []step{
				func(e *Expectations, _ *clocktesting.FakePassiveClock) { e.ExpectDeletions(key, 1) },
				func(e *Expectations, _ *clocktesting.FakePassiveClock) { e.DeletionObserved(key) },
				func(e *Expectations, _ *clocktesting.FakePassiveClock) { e.DeletionObserved(key) },
			},
			satisfied: true, del: -1, exists: true,
		},
		{
			name: "deletions outstanding while creations done",
			steps: []step{
				func(e *Expectations, _ *clocktesting.FakePassiveClock) { e.SetExpectations(key, 1, 1) },
				func(e *Expectations, _ *clocktesting.FakePassiveClock) { e.CreationObserved(key) },
			},
			del: 1, exists: true,
		},
		{
			name: "set replaces rather than accumulates",
			steps: []step{
				func(e *Expectations, _ *clocktesting.FakePassiveClock) { e.SetExpectations(key, 5, 5) },
				func(e *Expectations, _ *clocktesting.FakePassiveClock) { e.SetExpectations(key, 1, 0) },
			},
			add: 1, exists: true,
		},
		{
			name: "exactly at ttl still waits",
			steps: []step{
				func(e *Expectations, _ *clocktesting.FakePassiveClock) { e.ExpectCreations(key, 1) },
				func(_ *Expectations, clk *clocktesting.FakePassiveClock) {
					clk.SetTime(clk.Now().Add(DefaultExpectationsTTL))
				},
			},
			add: 1, exists: true,
		},
		{
			name: "older than ttl is satisfied",
			steps: []step{
				func(e *Expectations, _ *clocktesting.FakePassiveClock) { e.ExpectCreations(key, 1) },
				func(_ *Expectations, clk *clocktesting.FakePassiveClock) {
					clk.SetTime(clk.Now().Add(DefaultExpectationsTTL + time.Nanosecond))
				},
			},
			satisfied: true, add: 1, exists: true,
		},
		{
			name: "lower and raise keep the timestamp",
			steps: []step{
				func(e *Expectations, _ *clocktesting.FakePassiveClock) { e.ExpectCreations(key, 1) },
				func(_ *Expectations, clk *clocktesting.FakePassiveClock) {
					clk.SetTime(clk.Now().Add(DefaultExpectationsTTL - time.Second))
				},
				func(e *Expectations, _ *clocktesting.FakePassiveClock) { e.RaiseExpectations(key, 2, 1) },
				func(e *Expectations, _ *clocktesting.FakePassiveClock) { e.LowerExpectations(key, 1, 0) },
				func(_ *Expectations, clk *clocktesting.FakePassiveClock) {
					clk.SetTime(clk.Now().Add(2 * time.Second))
				},
			},
			satisfied: true, add: 2, del: 1, exists: true,
		},
		{
			name: "set again resets the ttl",
			steps: []step{
				func(e *Expectations, _ *clocktesting.FakePassiveClock) { e.ExpectCreations(key, 1) },
				func(_ *Expectations, clk *clocktesting.FakePassiveClock) {
					clk.SetTime(clk.Now().Add(DefaultExpectationsTTL + time.Second))
				},
				func(e *Expectations, _ *clocktesting.FakePassiveClock) { e.ExpectCreations(key, 1) },
			},
			add: 1, exists: true,
		},
		{
			name: "lower and raise without a record do nothing",
			steps: []step{
				func(e *Expectations, _ *clocktesting.FakePassiveClock) { e.RaiseExpectations(key, 3, 3) },
				func(e *Expectations, _ *clocktesting.FakePassiveClock) { e.CreationObserved(key) },
			},
			satisfied: true,
		},
		{
			name: "deleted",
			steps: []step{
				func(e *Expectations, _ *clocktesting.FakePassiveClock) { e.ExpectCreations(key, 3) },
				func(e *Expectations, _ *clocktesting.FakePassiveClock) { e.DeleteExpectations(key) },
			},
			satisfied: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, clk := newTestExpectations(t)
			for _, s := range tt.steps {
				s(e, clk)
			}
			if got := e.SatisfiedExpectations(key); got != tt.satisfied {
				t.Errorf("SatisfiedExpectations = %v, want %v", got, tt.satisfied)
			}
			add, del, exists := e.GetExpectations(key)
			if add != tt.add || del != tt.del || exists != tt.exists {
				t.Errorf("GetExpectations = (%d, %d, %v), want (%d, %d, %v)", add, del, exists, tt.add, tt.del, tt.exists)
			}
			if !e.SatisfiedExpectations("other/key") {
				t.Error("an unrelated key is held back")
			}
		})
	}
}

func TestExpectationsCustomTTL(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	e, err := NewExpectations(ExpectationsConfig{Clock: clk, TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	e.ExpectCreations("k", 1)
	clk.SetTime(clk.Now().Add(time.Second))
	if e.SatisfiedExpectations("k") {
		t.Fatal("satisfied at exactly the ttl")
	}
	clk.SetTime(clk.Now().Add(time.Millisecond))
	if !e.SatisfiedExpectations("k") {
		t.Fatal("not satisfied after the ttl")
	}
}

func TestUIDTrackingExpectations(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	u, err := NewUIDTrackingExpectations(ExpectationsConfig{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	const key = "ns/rs"
	u.ExpectDeletions(key, []string{"ns/a", "ns/b", "ns/b"})
	if _, del, _ := u.GetExpectations(key); del != 2 {
		t.Fatalf("duplicate ids counted: del = %d, want 2", del)
	}
	// The deletionTimestamp update and the delete itself both report ns/a:
	// the count drops once.
	u.DeletionObserved(key, "ns/a")
	u.DeletionObserved(key, "ns/a")
	// An object this key never expected does not count.
	u.DeletionObserved(key, "ns/unrelated")
	if _, del, _ := u.GetExpectations(key); del != 1 {
		t.Fatalf("after repeated observation del = %d, want 1", del)
	}
	if u.SatisfiedExpectations(key) {
		t.Fatal("satisfied with ns/b outstanding")
	}
	if diff := cmp.Diff([]string{"ns/b"}, u.ExpectedDeletions(key)); diff != "" {
		t.Fatalf("ExpectedDeletions (-want +got):\n%s", diff)
	}
	u.DeletionObserved(key, "ns/b")
	if !u.SatisfiedExpectations(key) {
		t.Fatal("not satisfied after every deletion observed")
	}

	// Creations are tracked by count on the same record.
	u.ExpectCreations(key, 1)
	if u.SatisfiedExpectations(key) {
		t.Fatal("satisfied with a creation outstanding")
	}
	u.CreationObserved(key)
	u.RaiseExpectations(key, 1, 0)
	u.LowerExpectations(key, 1, 0)
	if !u.SatisfiedExpectations(key) {
		t.Fatal("not satisfied after the creation observed")
	}

	// A new set of expected deletions replaces the old one.
	u.ExpectDeletions(key, []string{"ns/c"})
	u.ExpectDeletions(key, []string{"ns/d"})
	u.DeletionObserved(key, "ns/c")
	if u.SatisfiedExpectations(key) {
		t.Fatal("an id from a replaced set was counted")
	}
	// TTL applies to the UID-tracking variant too.
	clk.SetTime(clk.Now().Add(DefaultExpectationsTTL + time.Second))
	if !u.SatisfiedExpectations(key) {
		t.Fatal("not satisfied after the ttl")
	}

	u.DeleteExpectations(key)
	if _, _, exists := u.GetExpectations(key); exists {
		t.Fatal("record survived DeleteExpectations")
	}
	if got := u.ExpectedDeletions(key); got != nil {
		t.Fatalf("ids survived DeleteExpectations: %v", got)
	}
	// Observing after deletion is harmless.
	u.DeletionObserved(key, "ns/d")
}

// TestExpectationsConcurrent lowers a shared record from many goroutines
// and checks that no observation is lost and none is counted twice.
func TestExpectationsConcurrent(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))

	u, err := NewUIDTrackingExpectations(ExpectationsConfig{})
	if err != nil {
		t.Fatal(err)
	}
	const key = "ns/owner"
	n := 50 + rng.IntN(200)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "ns/pod-" + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676))
	}
	creates := rng.IntN(100)
	u.ExpectDeletions(key, ids)
	u.ExpectCreations(key, creates) // replaces the deletion count with 0.
	u.RaiseExpectations(key, 0, n)  // restore it.

	// Every id is observed by two goroutines, in a shuffled order.
	order := make([]string, 0, 2*n)
	order = append(order, ids...)
	order = append(order, ids...)
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })

	var wg sync.WaitGroup
	for _, id := range order {
		wg.Go(func() { u.DeletionObserved(key, id) })
	}
	for range creates {
		wg.Go(func() { u.CreationObserved(key) })
	}
	wg.Go(func() {
		for range 100 {
			u.SatisfiedExpectations(key)
		}
	})
	wg.Wait()

	add, del, _ := u.GetExpectations(key)
	if add != 0 || del != 0 {
		t.Fatalf("after all observations (add, del) = (%d, %d), want (0, 0)", add, del)
	}
	if left := u.ExpectedDeletions(key); len(left) != 0 {
		sort.Strings(left)
		t.Fatalf("ids left: %v", left)
	}
}
