package storagetest

import (
	"context"
	"testing"

	"github.com/kplane/kplane/pkg/storage"
)

// Factory returns a new, empty Backend for one test. It registers the
// Backend's Close (and anything else to tear down) with t.Cleanup.
type Factory func(t testing.TB) storage.Backend

// Compactor is implemented by backends that can compact on demand: after
// Compact(ctx, rev) returns, revisions older than rev are unreadable.
type Compactor interface {
	Compact(ctx context.Context, rev uint64) error
}

// ProgressRequester is implemented by backends that can ask every open
// watch with ProgressNotify for a Bookmark at the current revision now,
// as etcd's RequestProgress does.
type ProgressRequester interface {
	RequestWatchProgress(ctx context.Context) error
}

// test is one conformance check; it gets a fresh backend.
type test struct {
	name string
	run  func(t *testing.T, b storage.Backend)
	// stress marks long checks that are skipped under -short.
	stress bool
}

// Run runs every conformance check as a subtest of t, each on a fresh
// Backend from newBackend.
func Run(t *testing.T, newBackend Factory) {
	groups := [][]test{crudTests, listTests, watchTests, malformedTests, concurrencyTests}
	for _, g := range groups {
		for _, tc := range g {
			t.Run(tc.name, func(t *testing.T) {
				if tc.stress && testing.Short() {
					t.Skip("stress check skipped under -short")
				}
				tc.run(t, newBackend(t))
			})
		}
	}
}
