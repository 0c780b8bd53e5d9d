package workqueue

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestRing checks the ring against a slice, through growth and shrinking.
func TestRing(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	var rg ring[int]
	var model []int
	next := 0
	for step := range 200000 {
		// Phases of mostly pushing and mostly popping, so the ring grows
		// well past minShrink and empties again.
		pushBias := 3
		if (step/20000)%2 == 1 {
			pushBias = 1
		}
		if len(model) == 0 || r.IntN(4) < pushBias {
			rg.push(next)
			model = append(model, next)
			next++
		} else {
			got, want := rg.pop(), model[0]
			model = model[1:]
			if got != want {
				t.Fatalf("step %d: pop = %d, want %d", step, got, want)
			}
		}
		if rg.len() != len(model) {
			t.Fatalf("step %d: len = %d, want %d", step, rg.len(), len(model))
		}
		if c := len(rg.buf); c&(c-1) != 0 || c < rg.len() || (c > minShrink && rg.len() < c/8) {
			t.Fatalf("step %d: capacity %d for %d elements", step, c, rg.len())
		}
	}
}
