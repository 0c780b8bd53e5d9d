package wakeup

import (
	"slices"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestDelayerKeepsEarliest(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	var mu sync.Mutex
	var got []string
	d := New(clk, func(key string) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, key)
	})
	d.After("a", 10*time.Second)
	d.After("a", 20*time.Second) // later: ignored
	d.After("b", 30*time.Second)
	d.After("b", 5*time.Second) // earlier: replaces
	d.After("c", 5*time.Second)
	d.Forget("c")
	if at, ok := d.Pending("b"); !ok || !at.Equal(t0.Add(5*time.Second)) {
		t.Errorf("Pending(b) = %v %v, want %v", at, ok, t0.Add(5*time.Second))
	}
	if _, ok := d.Pending("c"); ok {
		t.Error("a forgotten wake-up is pending")
	}

	clk.Step(5 * time.Second)
	clk.Step(5 * time.Second)
	clk.Step(30 * time.Second)
	if _, ok := d.Pending("a"); ok {
		t.Error("a fired wake-up is still pending")
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"b", "a"}; !slices.Equal(got, want) {
		t.Errorf("enqueued %v, want %v", got, want)
	}
	d.Stop()
	d.Stop() // idempotent
	d.After("a", time.Second)
	if clk.HasWaiters() {
		t.Error("a stopped delayer armed a timer")
	}
}
