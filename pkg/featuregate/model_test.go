package featuregate

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/version"
)

// model is a plain re-statement of the documented rules, checked against
// the Registry on random operations.
type model struct {
	ver      *version.Version
	specs    map[Feature]VersionedSpecs
	defaults map[Feature]bool
	explicit map[Feature]bool
}

func (m *model) spec(f Feature) (FeatureSpec, bool) {
	specs, ok := m.specs[f]
	if !ok {
		return FeatureSpec{}, false
	}
	var cur *FeatureSpec
	for i := range specs {
		if m.ver == nil || specs[i].Version.Major() < m.ver.Major() ||
			specs[i].Version.Major() == m.ver.Major() && specs[i].Version.Minor() <= m.ver.Minor() {
			cur = &specs[i]
		}
	}
	if cur == nil {
		return FeatureSpec{PreRelease: PreAlpha}, true
	}
	s := *cur
	if d, ok := m.defaults[f]; ok {
		s.Default = d
	}
	return s, true
}

func (m *model) value(f Feature) bool {
	s, ok := m.spec(f)
	if !ok {
		return false
	}
	if v, ok := m.explicit[f]; ok {
		return v
	}
	if s.LockToDefault || f == AllAlpha || f == AllBeta {
		return s.Default
	}
	if v, ok := m.explicit[AllAlpha]; ok && s.PreRelease == Alpha {
		return v
	}
	if v, ok := m.explicit[AllBeta]; ok && s.PreRelease == Beta {
		return v
	}
	return s.Default
}

// set reports whether the model accepts the settings, applying them if so.
func (m *model) set(in map[string]bool) bool {
	for k, v := range in {
		s, ok := m.spec(Feature(k))
		if !ok || s.PreRelease == PreAlpha || s.LockToDefault && s.Default != v {
			return false
		}
	}
	for k, v := range in {
		m.explicit[Feature(k)] = v
	}
	return true
}

func (m *model) override(f Feature, v bool) bool {
	s, ok := m.spec(f)
	if !ok || f == AllAlpha || f == AllBeta || s.LockToDefault || s.PreRelease == PreAlpha {
		return false
	}
	m.defaults[f] = v
	return true
}

// randomSpecs makes a valid history: stages never regress, versions grow.
func randomSpecs(rng *rand.Rand) VersionedSpecs {
	stages := []Stage{Alpha, Beta, GA, Deprecated}
	var out VersionedSpecs
	stage := rng.IntN(len(stages))
	minor := uint(rng.IntN(3))
	for n := 1 + rng.IntN(3); n > 0 && stage < len(stages); n-- {
		s := stages[stage]
		out = append(out, FeatureSpec{
			Default:       rng.IntN(2) == 0,
			LockToDefault: s == GA && rng.IntN(2) == 0 || rng.IntN(8) == 0,
			PreRelease:    s,
			Version:       version.MajorMinor(1, minor),
		})
		minor += 1 + uint(rng.IntN(2))
		if s != Deprecated {
			stage += rng.IntN(2)
		}
	}
	return out
}

func TestRandomAgainstModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	rounds := 300
	if testing.Short() {
		rounds = 50
	}
	for round := range rounds {
		var ver *version.Version
		if rng.IntN(4) > 0 {
			ver = version.MajorMinor(1, uint(rng.IntN(8)))
		}
		r, err := New(Config{Version: ver})
		if err != nil {
			t.Fatal(err)
		}
		m := &model{ver: ver, specs: map[Feature]VersionedSpecs{}, defaults: map[Feature]bool{}, explicit: map[Feature]bool{}}
		m.specs[AllAlpha] = VersionedSpecs{{PreRelease: Alpha, Version: version.MajorMinor(0, 0)}}
		m.specs[AllBeta] = VersionedSpecs{{PreRelease: Beta, Version: version.MajorMinor(0, 0)}}
		add := map[Feature]VersionedSpecs{}
		for i := range 6 {
			add[Feature(fmt.Sprintf("F%d", i))] = randomSpecs(rng)
		}
		if err := r.AddVersioned(add); err != nil {
			t.Fatalf("round %d: AddVersioned(%v): %v", round, add, err)
		}
		for f, s := range add {
			m.specs[f] = s
		}
		names := []string{"F0", "F1", "F2", "F3", "F4", "F5", "AllAlpha", "AllBeta", "Unknown"}
		for op := range 20 {
			desc := ""
			switch rng.IntN(4) {
			case 0:
				f, v := Feature(names[rng.IntN(len(names))]), rng.IntN(2) == 0
				desc = fmt.Sprintf("OverrideDefault(%s, %t)", f, v)
				if got, want := r.OverrideDefault(f, v) == nil, m.override(f, v); got != want {
					t.Fatalf("round %d op %d: %s accepted=%t, model says %t", round, op, desc, got, want)
				}
			default:
				in := map[string]bool{}
				for n := 1 + rng.IntN(3); n > 0; n-- {
					in[names[rng.IntN(len(names))]] = rng.IntN(2) == 0
				}
				desc = fmt.Sprintf("SetFromMap(%v)", in)
				if got, want := r.SetFromMap(in) == nil, m.set(in); got != want {
					t.Fatalf("round %d op %d: %s accepted=%t, model says %t", round, op, desc, got, want)
				}
			}
			for _, n := range names {
				if got, want := r.Enabled(Feature(n)), m.value(Feature(n)); got != want {
					t.Fatalf("round %d op %d after %s at version %v: Enabled(%s)=%t, model says %t (specs %v)",
						round, op, desc, ver, n, got, want, m.specs[Feature(n)])
				}
			}
		}
	}
}
