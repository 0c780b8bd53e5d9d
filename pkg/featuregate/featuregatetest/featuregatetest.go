package featuregatetest

import (
	"testing"

	"github.com/kplane/kplane/pkg/featuregate"
)

// New returns frozen Gates that know features, resolved at cfg.Version,
// with set applied on top. Any error (a bad spec, an unknown or locked
// feature in set) fails the test at once. The Gates are immutable, so
// parallel tests can each build their own without interfering.
func New(tb testing.TB, cfg featuregate.Config, features map[featuregate.Feature]featuregate.VersionedSpecs, set map[featuregate.Feature]bool) featuregate.Gates {
	tb.Helper()
	r, err := featuregate.New(cfg)
	if err != nil {
		tb.Fatalf("featuregate.New: %v", err)
	}
	if err := r.AddVersioned(features); err != nil {
		tb.Fatalf("adding features: %v", err)
	}
	m := make(map[string]bool, len(set))
	for f, v := range set {
		m[string(f)] = v
	}
	if err := r.SetFromMap(m); err != nil {
		tb.Fatalf("setting features: %v", err)
	}
	return r.Freeze()
}
