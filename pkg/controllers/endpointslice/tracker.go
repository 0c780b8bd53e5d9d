package endpointslice

import (
	"sync"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

// deletionExpected marks, in tracker, a slice the controller deleted.
const deletionExpected = -1

// tracker remembers the generation of every EndpointSlice the controller
// wrote, per Service, so that a sync can tell whether the informer's cache
// has caught up with the controller's own writes (a stale cache would make
// it redo or undo them) and so that the informer's echo of a write does not
// trigger a sync. It is safe for concurrent use.
type tracker struct {
	mu sync.Mutex
	// generations maps a Service key to the generations of its slices by
	// UID; deletionExpected for slices deleted but not yet seen gone.
	generations map[string]map[types.UID]int64
}

func newTracker() *tracker { return &tracker{generations: map[string]map[types.UID]int64{}} }

// serviceKey is the key of the Service slice belongs to, "" if it names none.
func serviceKey(slice *discoveryv1.EndpointSlice) string {
	name := slice.Labels[discoveryv1.LabelServiceName]
	if name == "" {
		return ""
	}
	return slice.Namespace + "/" + name
}

// has reports whether slice is tracked.
func (t *tracker) has(slice *discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.generations[serviceKey(slice)][slice.UID]
	return ok
}

// shouldSync reports whether the informer's slice is news: not tracked,
// or of a generation newer than the controller wrote.
func (t *tracker) shouldSync(slice *discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	g, ok := t.generations[serviceKey(slice)][slice.UID]
	return !ok || slice.Generation > g
}

// stale reports whether slices, the cached slices of the Service at key,
// lag behind the controller's writes: a slice older than written, one
// deleted, or one created and not listed.
func (t *tracker) stale(key string, slices []*discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	gens, ok := t.generations[key]
	if !ok {
		return false
	}
	listed := make(map[types.UID]bool, len(slices))
	for _, s := range slices {
		listed[s.UID] = true
		if g, ok := gens[s.UID]; ok && (g == deletionExpected || g > s.Generation) {
			return true
		}
	}
	for uid, g := range gens {
		if g != deletionExpected && !listed[uid] {
			return true
		}
	}
	return false
}

// update records the generation of a slice the controller wrote.
func (t *tracker) update(slice *discoveryv1.EndpointSlice) {
	t.set(slice, slice.Generation)
}

// expectDeletion records that the controller deleted slice.
func (t *tracker) expectDeletion(slice *discoveryv1.EndpointSlice) {
	t.set(slice, deletionExpected)
}

func (t *tracker) set(slice *discoveryv1.EndpointSlice, g int64) {
	key := serviceKey(slice)
	t.mu.Lock()
	defer t.mu.Unlock()
	gens, ok := t.generations[key]
	if !ok {
		gens = map[types.UID]int64{}
		t.generations[key] = gens
	}
	gens[slice.UID] = g
}

// handleDeletion forgets slice, seen deleted, and reports whether the
// controller deleted it.
func (t *tracker) handleDeletion(slice *discoveryv1.EndpointSlice) bool {
	key := serviceKey(slice)
	t.mu.Lock()
	defer t.mu.Unlock()
	gens := t.generations[key]
	g, ok := gens[slice.UID]
	delete(gens, slice.UID)
	if len(gens) == 0 {
		delete(t.generations, key)
	}
	return ok && g == deletionExpected
}

// forget drops the Service at key.
func (t *tracker) forget(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.generations, key)
}
