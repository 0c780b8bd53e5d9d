package featuregate

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/version"
)

// Feature names a gated feature, such as "WatchList". Names are
// case-sensitive and contain no '=', ',' or white space, so that every
// feature can be named in a --feature-gates flag.
type Feature string

// The special gates every Registry knows. Setting one of them sets every
// feature that is at that stage at the registry's version and that is neither
// set on its own nor locked to its default. A feature set on its own always
// wins, whichever order the settings come in:
//
//	AllAlpha=true,NewFeature=false  leaves NewFeature off
//	AllAlpha=false,NewFeature=true  turns NewFeature on
const (
	AllAlpha Feature = "AllAlpha"
	AllBeta  Feature = "AllBeta"
)

// Stage is the maturity of a feature at a given version. Its string is the
// one printed in the --feature-gates usage, as Kubernetes prints it.
type Stage string

// The stages a feature goes through. A feature normally moves from Alpha to
// Beta to GA, and may end Deprecated; specs never move back to a less stable
// stage and never leave Deprecated.
const (
	// PreAlpha is the stage of a feature at a version before its first
	// spec: the feature does not exist yet there. It is never registered
	// directly; such a feature is off and cannot be set.
	PreAlpha Stage = "PRE-ALPHA"
	// Alpha features are off by default, may be buggy and may go away.
	Alpha Stage = "ALPHA"
	// Beta features are well tested; their default is usually on.
	Beta Stage = "BETA"
	// GA features are stable. A GA feature is normally locked to on and its
	// gate is removed a few releases later; setting it logs a warning.
	GA Stage = "GA"
	// Deprecated features are on their way out; setting one logs a warning.
	Deprecated Stage = "DEPRECATED"
)

// rank orders the stages a spec list may move through; -1 marks a stage
// that cannot be registered.
func (s Stage) rank() int {
	switch s {
	case Alpha:
		return 1
	case Beta:
		return 2
	case GA:
		return 3
	case Deprecated:
		return 4
	default:
		return -1
	}
}

// FeatureSpec describes a feature from one version on.
type FeatureSpec struct {
	// Default is whether the feature is on when nobody sets it.
	Default bool
	// LockToDefault makes the feature always report Default: setting it to
	// the other value is an error and AllAlpha/AllBeta skip it.
	LockToDefault bool
	// PreRelease is the feature's stage. It must be Alpha, Beta, GA or
	// Deprecated; the zero value is rejected so that a forgotten stage is
	// an error rather than a silent GA.
	PreRelease Stage
	// Version is the component version (major.minor, no patch) from which
	// this spec applies. It is required in VersionedSpecs and must be nil
	// in the specs given to Registry.Add, which apply at every version.
	Version *version.Version
}

// String formats the spec for error messages.
func (s FeatureSpec) String() string {
	v := "any"
	if s.Version != nil {
		v = s.Version.String()
	}
	return fmt.Sprintf("{Default: %t, LockToDefault: %t, PreRelease: %s, Version: %s}", s.Default, s.LockToDefault, s.PreRelease, v)
}

// equal reports whether two specs say the same thing.
func (s FeatureSpec) equal(o FeatureSpec) bool {
	if s.Default != o.Default || s.LockToDefault != o.LockToDefault || s.PreRelease != o.PreRelease {
		return false
	}
	if s.Version == nil || o.Version == nil {
		return s.Version == nil && o.Version == nil
	}
	return s.Version.EqualTo(o.Version)
}

// VersionedSpecs is a feature's history: one spec per version at which the
// feature changed, in strictly increasing version order. The spec in effect
// at a version is the last one whose Version is not after it; before the
// first one the feature is PreAlpha.
type VersionedSpecs []FeatureSpec

func (vs VersionedSpecs) equal(o VersionedSpecs) bool {
	if len(vs) != len(o) {
		return false
	}
	for i := range vs {
		if !vs[i].equal(o[i]) {
			return false
		}
	}
	return true
}

// at returns the spec in effect at v; a nil v means the newest spec.
func (vs VersionedSpecs) at(v *version.Version) FeatureSpec {
	if v == nil {
		return vs[len(vs)-1]
	}
	for i := len(vs) - 1; i >= 0; i-- {
		if !vs[i].Version.GreaterThan(v) {
			return vs[i]
		}
	}
	return FeatureSpec{PreRelease: PreAlpha, Version: version.MajorMinor(0, 0)}
}
