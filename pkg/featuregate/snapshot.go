package featuregate

import (
	"fmt"
	"slices"
)

// snapshot is the resolved, immutable state of a Registry at one moment.
// Readers load it atomically and never see a half-applied write.
type snapshot struct {
	// enabled holds the value of every known feature at the registry's
	// version, AllAlpha and AllBeta included. Unknown features are absent,
	// and so read as false.
	enabled map[Feature]bool
	// known is the sorted KnownFeatures list; callers get copies.
	known []string
}

// publishLocked resolves the registry's state into a new snapshot and
// publishes it. r.mu must be held (or r not yet shared).
func (r *Registry) publishLocked() {
	s := &snapshot{enabled: make(map[Feature]bool, len(r.known))}
	allAlpha, allAlphaSet := r.explicit[AllAlpha]
	allBeta, allBetaSet := r.explicit[AllBeta]
	for name := range r.known {
		spec := r.specLocked(name)
		v := spec.Default
		if e, ok := r.explicit[name]; ok {
			v = e
		} else if !spec.LockToDefault && name != AllAlpha && name != AllBeta {
			switch {
			case spec.PreRelease == Alpha && allAlphaSet:
				v = allAlpha
			case spec.PreRelease == Beta && allBetaSet:
				v = allBeta
			}
		}
		s.enabled[name] = v

		// GA, Deprecated and PreAlpha features are not advertised.
		if name == AllAlpha || name == AllBeta || spec.PreRelease == Alpha || spec.PreRelease == Beta {
			s.known = append(s.known, fmt.Sprintf("%s=true|false (%s - default=%t)", name, spec.PreRelease, spec.Default))
		}
	}
	slices.Sort(s.known)
	r.snap.Store(s)
}

// frozenGates is the read-only view Freeze returns. Its snapshot is never
// replaced.
type frozenGates struct{ s *snapshot }

var _ Gates = frozenGates{}

func (g frozenGates) Enabled(f Feature) bool  { return g.s.enabled[f] }
func (g frozenGates) KnownFeatures() []string { return slices.Clone(g.s.known) }
