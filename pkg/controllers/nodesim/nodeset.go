package nodesim

import (
	"slices"
	"sync"
)

// nodeSet holds the simulated nodes, which AddNode and RemoveNode change
// while the simulator runs. Safe for concurrent use; a *nodeSpec it hands
// out is never changed after it was added.
type nodeSet struct {
	mu sync.RWMutex
	// byName holds the nodes; sorted their names; next the index of the
	// next node added. Guarded by mu.
	byName map[string]*nodeSpec
	sorted []string
	next   int
}

func newNodeSet(specs []nodeSpec) *nodeSet {
	s := &nodeSet{byName: make(map[string]*nodeSpec, len(specs)), next: len(specs)}
	for i := range specs {
		s.byName[specs[i].name] = &specs[i]
		s.sorted = append(s.sorted, specs[i].name)
	}
	slices.Sort(s.sorted)
	return s
}

// get returns the node named name, or nil when it is not simulated.
func (s *nodeSet) get(name string) *nodeSpec {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.byName[name]
}

// names returns the sorted node names; the caller owns the slice.
func (s *nodeSet) names() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.sorted)
}

// all returns the nodes in name order.
func (s *nodeSet) all() []*nodeSpec {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*nodeSpec, len(s.sorted))
	for i, n := range s.sorted {
		out[i] = s.byName[n]
	}
	return out
}

func (s *nodeSet) len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.byName)
}

// addNext makes the node of the next index with mk, adds it and returns it.
func (s *nodeSet) addNext(mk func(i int) nodeSpec) *nodeSpec {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := mk(s.next)
	s.next++
	s.byName[n.name] = &n
	s.sorted = append(s.sorted, n.name)
	slices.Sort(s.sorted)
	return &n
}

// remove drops the node named name and reports whether it was there.
func (s *nodeSet) remove(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.byName[name]; !ok {
		return false
	}
	delete(s.byName, name)
	s.sorted = slices.DeleteFunc(s.sorted, func(n string) bool { return n == name })
	return true
}
