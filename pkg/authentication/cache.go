package authentication

import (
	"sync"
	"time"
)

// verifiedCache remembers the outcome of expensive verifications
// (certificate chains, token signatures) keyed by a digest of what was
// verified, so that a client sending the same credentials on every
// request pays for the cryptography once. It holds at most max entries:
// when full, an arbitrary entry makes room, so a flood of distinct
// credentials costs verification time, never memory. Only successes are
// stored, and each is kept no longer than until it stops being valid.
//
// verifiedCache is safe for concurrent use.
type verifiedCache[V any] struct {
	mu      sync.Mutex
	max     int
	entries map[[32]byte]cacheEntry[V] // guarded by mu
}

type cacheEntry[V any] struct {
	value V
	until time.Time
}

// verifiedCacheSize bounds each cache; a cluster has far fewer distinct
// clients than this.
const verifiedCacheSize = 4096

func newVerifiedCache[V any](max int) *verifiedCache[V] {
	return &verifiedCache[V]{max: max, entries: map[[32]byte]cacheEntry[V]{}}
}

// get returns the value stored for key when it is still valid at now.
func (c *verifiedCache[V]) get(key [32]byte, now time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || !now.Before(e.until) {
		if ok {
			delete(c.entries, key)
		}
		var zero V
		return zero, false
	}
	return e.value, true
}

// put stores value for key until until.
func (c *verifiedCache[V]) put(key [32]byte, value V, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; !ok && len(c.entries) >= c.max {
		for k := range c.entries {
			delete(c.entries, k)
			break
		}
	}
	c.entries[key] = cacheEntry[V]{value: value, until: until}
}
