package workqueue

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	kwq "github.com/kplane/kplane/pkg/workqueue"
	cgwq "k8s.io/client-go/util/workqueue"
)

// TestSameBehaviourAsClientGo drives kplane's queue and client-go's with the
// same random single-goroutine sequence of Add, Get, Done, Len and
// ShutDown, and checks that every result matches: kplane keeps client-go's
// FIFO order, deduplication, processing set and shutdown behaviour. Done is
// only called for items being processed: for other items client-go queues a
// dirty item a second time, which kplane deliberately does not do.
func TestSameBehaviourAsClientGo(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	for round := range 200 {
		ours, err := kwq.New[string](kwq.Config{})
		if err != nil {
			t.Fatal(err)
		}
		theirs := cgwq.NewTyped[string]()
		var processing []string
		var trace []string
		for step := range 200 {
			var op string
			switch n := r.IntN(20); {
			case n < 9:
				key := fmt.Sprint("k", r.IntN(6))
				ours.Add(key)
				theirs.Add(key)
				op = "add " + key
			case n < 15:
				if theirs.Len() == 0 {
					continue // Get would block
				}
				a, aShut := ours.Get()
				b, bShut := theirs.Get()
				op = fmt.Sprintf("get %s/%v %s/%v", a, aShut, b, bShut)
				if a != b || aShut != bShut {
					t.Fatalf("round %d step %d: Get differs: kplane %q %v, client-go %q %v\ntrace: %v",
						round, step, a, aShut, b, bShut, trace)
				}
				if !aShut {
					processing = append(processing, a)
				}
			case n < 19:
				if len(processing) == 0 {
					continue
				}
				i := r.IntN(len(processing))
				key := processing[i]
				processing = slices.Delete(processing, i, i+1)
				ours.Done(key)
				theirs.Done(key)
				op = "done " + key
			default:
				if r.IntN(10) == 0 {
					ours.ShutDown()
					theirs.ShutDown()
					op = "shutdown"
				}
			}
			trace = append(trace, op)
			if a, b := ours.Len(), theirs.Len(); a != b {
				t.Fatalf("round %d step %d: Len differs: kplane %d, client-go %d\ntrace: %v", round, step, a, b, trace)
			}
			if a, b := ours.ShuttingDown(), theirs.ShuttingDown(); a != b {
				t.Fatalf("round %d step %d: ShuttingDown differs\ntrace: %v", round, step, trace)
			}
		}
		ours.ShutDown()
		theirs.ShutDown()
	}
}
