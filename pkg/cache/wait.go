package cache

import (
	"context"
	"time"
)

// syncPollInterval is how often WaitForCacheSync checks.
const syncPollInterval = 100 * time.Millisecond

// WaitForCacheSync blocks until every synced function reports true (checked
// every 100ms) or ctx ends; it reports whether all synced.
func WaitForCacheSync(ctx context.Context, synced ...func() bool) bool {
	t := time.NewTicker(syncPollInterval)
	defer t.Stop()
	for {
		all := true
		for _, s := range synced {
			if !s() {
				all = false
				break
			}
		}
		if all {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}
