package garbagecollector

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

var graphSeed = flag.Uint64("graph.seed", 0, "seed of TestGraphRandomInvariants; 0 picks one")

// TestGraphRandomInvariants applies random adds, owner changes and deletes
// (cycles and self-references included) and checks after every event that
// the graph's links agree both ways: every observed node's owner has it as
// a dependent, and every dependent names its owner.
func TestGraphRandomInvariants(t *testing.T) {
	seed := *graphSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -graph.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	const objects = 8
	steps := 2000
	if testing.Short() {
		steps = 300
	}
	gb, _, _, _ := newTestBuilder()
	live := map[string]object{}
	// A uid is never reused: slot i's objects are oI-gN for generations
	// N = 0, 1, ... Owners are named by the slot's current generation, the
	// previous one (deleted) or the next one (not created yet, so virtual).
	gen := make([]int, objects)
	deleted := map[string]bool{}
	uidOf := func(slot, g int) string { return fmt.Sprintf("o%d-g%d", slot, g) }
	randomOwners := func() []string {
		var owners []string
		for range rng.IntN(3) {
			slot := rng.IntN(objects)
			owners = append(owners, uidOf(slot, max(0, gen[slot]+rng.IntN(3)-1)))
		}
		// ownerReferences are unique by uid on a real object.
		seen := map[string]bool{}
		var out []string
		for _, o := range owners {
			if !seen[o] {
				seen[o] = true
				out = append(out, o)
			}
		}
		return out
	}
	for step := range steps {
		slot := rng.IntN(objects)
		uid := uidOf(slot, gen[slot])
		old, exists := live[uid]
		switch {
		case !exists:
			o := object{uid: uid, owners: randomOwners(), blocking: rng.IntN(2) == 0}
			live[uid] = o
			gb.processEvent(add(o))
		case rng.IntN(3) == 0:
			delete(live, uid)
			deleted[uid] = true
			gen[slot]++
			gb.processEvent(remove(old))
		default:
			o := object{uid: uid, owners: randomOwners(), blocking: rng.IntN(2) == 0}
			live[uid] = o
			gb.processEvent(update(old, o))
		}
		if err := checkGraph(gb.graph, live, deleted); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	}
}

// checkGraph checks the links of g against the objects live. Links to
// owners whose deletion was observed are not checked: as in Kubernetes,
// the dependents were queued for the workers when the owner went, and a
// virtual node made for the uid later lists only dependents added since.
func checkGraph(g *graph, live map[string]object, deleted map[string]bool) error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	for uid, o := range live {
		n, ok := g.nodes[types.UID(uid)]
		if !ok || n.virtual {
			return fmt.Errorf("live object %s has no observed node", uid)
		}
		if len(n.owners) != len(o.owners) {
			return fmt.Errorf("%s: node has %d owners, object %d", uid, len(n.owners), len(o.owners))
		}
		for _, r := range n.owners {
			owner, ok := g.nodes[r.UID]
			if deleted[string(r.UID)] {
				continue
			}
			if !ok {
				if _, isLive := live[string(r.UID)]; isLive {
					return fmt.Errorf("%s: live owner %s missing from the graph", uid, r.UID)
				}
				return fmt.Errorf("%s: owner %s missing from the graph", uid, r.UID)
			}
			if _, ok := owner.dependents[n]; !ok {
				return fmt.Errorf("%s: owner %s does not list it as a dependent", uid, r.UID)
			}
		}
	}
	for uid, n := range g.nodes {
		if n.identity.UID != uid {
			return fmt.Errorf("node under %s has uid %s", uid, n.identity.UID)
		}
		if _, isLive := live[string(uid)]; !isLive && !n.virtual {
			return fmt.Errorf("deleted object %s still has an observed node", uid)
		}
		for d := range n.dependents {
			if g.nodes[d.identity.UID] != d {
				return fmt.Errorf("%s lists dependent %s, which is not in the graph", uid, d.identity.UID)
			}
			names := false
			for _, r := range d.owners {
				names = names || r.UID == uid
			}
			if !names {
				return fmt.Errorf("%s lists dependent %s, which does not name it", uid, d.identity.UID)
			}
		}
	}
	return nil
}
