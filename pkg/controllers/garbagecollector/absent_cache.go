package garbagecollector

import "sync"

// absentCache remembers owners a live read found absent, so the dependents
// of one deleted owner do not each read it again. It holds at most max
// identities and forgets the oldest first. Safe for concurrent use.
type absentCache struct {
	mu    sync.Mutex
	max   int
	set   map[identity]struct{} // guarded by mu
	order []identity            // insertion order; guarded by mu
}

func newAbsentCache(max int) *absentCache {
	return &absentCache{max: max, set: map[identity]struct{}{}}
}

func (c *absentCache) add(id identity) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.set[id]; ok {
		return
	}
	if len(c.order) >= c.max {
		delete(c.set, c.order[0])
		c.order = c.order[1:]
	}
	c.set[id] = struct{}{}
	c.order = append(c.order, id)
}

func (c *absentCache) has(id identity) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.set[id]
	return ok
}
