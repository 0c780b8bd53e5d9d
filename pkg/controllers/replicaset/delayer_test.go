package replicaset

import (
	"slices"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestDelayerKeepsEarliest(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	var mu sync.Mutex
	var got []string
	d := newDelayer(clk, func(key string) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, key)
	})
	d.after("a", 10*time.Second)
	d.after("a", 20*time.Second) // later: ignored
	d.after("b", 30*time.Second)
	d.after("b", 5*time.Second) // earlier: replaces
	d.after("c", 5*time.Second)
	d.forget("c")

	clk.Step(5 * time.Second)
	clk.Step(5 * time.Second)
	clk.Step(30 * time.Second)
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"b", "a"}; !slices.Equal(got, want) {
		t.Errorf("enqueued %v, want %v", got, want)
	}
	d.stop()
	d.after("a", time.Second)
	if clk.HasWaiters() {
		t.Error("a stopped delayer armed a timer")
	}
}
