package featuregate

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"

	"k8s.io/apimachinery/pkg/util/version"
)

// Registry is the mutable set of feature gates a binary owns: cmd/ creates
// one, adds the features of every component it runs, binds it to the
// --feature-gates flag, applies the settings, then Freezes it and hands the
// returned Gates to its components.
//
// The life of a Registry has three phases:
//
//  1. Open: Add, AddVersioned, OverrideDefault, Set and SetFromMap all work.
//  2. Closed, after AddFlag: the set of features and their defaults is fixed
//     (the flag usage already lists them), so Add, AddVersioned and
//     OverrideDefault return ErrClosed; Set and SetFromMap still work, as
//     flag parsing needs them.
//  3. Frozen, after Freeze: nothing changes any more; Set and SetFromMap
//     return ErrFrozen too.
//
// Reads (Enabled, KnownFeatures) work in every phase and see the latest
// committed state. Every method is safe for concurrent use. Enabled loads an
// immutable snapshot with one atomic load and one map lookup: it never
// blocks and never allocates. Writers serialise on a mutex and publish a new
// snapshot; every write is all-or-nothing, so a rejected call leaves the
// registry as it was. Use New: the zero Registry is not usable.
type Registry struct {
	version *version.Version // major.minor of Config.Version, or nil; immutable
	logger  *slog.Logger     // never nil; immutable

	// snap is the resolved state readers see. It is replaced, never
	// modified, and only while mu is held.
	snap atomic.Pointer[snapshot]

	mu sync.Mutex
	// known maps every registered feature, including AllAlpha and AllBeta,
	// to its specs (validated, so in increasing version order; our own
	// copy, never modified).
	known map[Feature]VersionedSpecs
	// defaults holds OverrideDefault values: they replace the Default of
	// the spec in effect at the registry's version. Only unlocked,
	// available features appear here.
	defaults map[Feature]bool
	// explicit holds the values set through Set/SetFromMap, including
	// AllAlpha and AllBeta. Every key is known, and every value passed the
	// lock and availability checks at the registry's version.
	explicit map[Feature]bool
	closed   bool // set by AddFlag and Freeze; never cleared
	frozen   bool // set by Freeze; never cleared; implies closed
}

var _ Gates = (*Registry)(nil)

// New returns an open Registry that knows only AllAlpha and AllBeta. Every
// Config is valid today; the error is there for future fields.
func New(cfg Config) (*Registry, error) {
	r := &Registry{
		logger:   cfg.Logger,
		known:    map[Feature]VersionedSpecs{},
		defaults: map[Feature]bool{},
		explicit: map[Feature]bool{},
	}
	if cfg.Version != nil {
		r.version = version.MajorMinor(cfg.Version.Major(), cfg.Version.Minor())
	}
	if r.logger == nil {
		r.logger = slog.New(slog.DiscardHandler)
	}
	r.known[AllAlpha] = VersionedSpecs{{Default: false, PreRelease: Alpha, Version: version.MajorMinor(0, 0)}}
	r.known[AllBeta] = VersionedSpecs{{Default: false, PreRelease: Beta, Version: version.MajorMinor(0, 0)}}
	r.publishLocked()
	return r, nil
}

// Version returns the major.minor version specs are resolved against, or
// nil if every feature follows its newest spec. The caller must not modify
// it.
func (r *Registry) Version() *version.Version { return r.version }

// Enabled reports whether f is on: its explicit setting if it has one, else
// the AllAlpha or AllBeta setting if f is at that stage and not locked, else
// its default at the registry's version. A feature the registry does not
// know is off. Enabled never blocks or allocates.
func (r *Registry) Enabled(f Feature) bool {
	return r.snap.Load().enabled[f]
}

// KnownFeatures implements Gates.
func (r *Registry) KnownFeatures() []string {
	return slices.Clone(r.snap.Load().known)
}

// ExplicitlySet reports whether f was given a value by Set or SetFromMap.
func (r *Registry) ExplicitlySet(f Feature) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.explicit[f]
	return ok
}

// Add registers features whose spec does not depend on the version. Each
// spec's Version must be nil. See AddVersioned for the rules.
func (r *Registry) Add(features map[Feature]FeatureSpec) error {
	vs := make(map[Feature]VersionedSpecs, len(features))
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(features)) {
		spec := features[name]
		if spec.Version != nil {
			errs = append(errs, &gateError{fmt.Sprintf("feature %q: Add takes specs without a version, use AddVersioned", name), ErrInvalidSpec})
			continue
		}
		spec.Version = version.MajorMinor(0, 0)
		vs[name] = VersionedSpecs{spec}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return r.AddVersioned(vs)
}

// AddVersioned registers features with their spec history. Adding a feature
// again with the same specs is a no-op, so components sharing a feature may
// each add it; adding it with different specs is an error. Each feature
// needs at least one spec; every spec needs a major.minor Version and a
// stage of Alpha, Beta, GA or Deprecated; versions strictly increase; a
// feature never moves back to a less stable stage and never leaves
// Deprecated. Names must be non-empty and free of '=', ',' and white space.
//
// Either every feature is added or, on error, none is. AddVersioned returns
// ErrClosed once AddFlag or Freeze has been called. The registry keeps its
// own copy of the slices.
func (r *Registry) AddVersioned(features map[Feature]VersionedSpecs) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return &gateError{"cannot add feature gates after they were added to a flag set or frozen", ErrClosed}
	}
	names := slices.Sorted(maps.Keys(features))
	var errs []error
	for _, name := range names {
		specs := features[name]
		if old, ok := r.known[name]; ok {
			if !old.equal(specs) {
				errs = append(errs, &gateError{fmt.Sprintf("feature gate %q with different spec already exists: %v", name, old), ErrInvalidSpec})
			}
			continue
		}
		if err := validate(name, specs); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, name := range names {
		if _, ok := r.known[name]; !ok {
			r.known[name] = slices.Clone(features[name])
		}
	}
	r.publishLocked()
	return nil
}

// validate checks one new feature's name and specs.
func validate(name Feature, specs VersionedSpecs) error {
	invalid := func(format string, args ...any) error {
		return &gateError{fmt.Sprintf("feature %q: ", name) + fmt.Sprintf(format, args...), ErrInvalidSpec}
	}
	if name == "" {
		return &gateError{"feature name must not be empty", ErrInvalidSpec}
	}
	if strings.ContainsFunc(string(name), func(c rune) bool { return c == '=' || c == ',' || unicode.IsSpace(c) }) {
		return invalid("name must not contain '=', ',' or white space")
	}
	if len(specs) == 0 {
		return invalid("no specs given")
	}
	for i, spec := range specs {
		if spec.Version == nil {
			return invalid("spec %d has no version", i)
		}
		if len(spec.Version.Components()) != 2 || spec.Version.PreRelease() != "" || spec.Version.BuildMetadata() != "" {
			return invalid("version %s must be major.minor only", spec.Version)
		}
		if spec.PreRelease.rank() < 0 {
			return invalid("unknown stage %q at version %s, want ALPHA, BETA, GA or DEPRECATED", spec.PreRelease, spec.Version)
		}
		if i == 0 {
			continue
		}
		prev := specs[i-1]
		switch {
		case !prev.Version.LessThan(spec.Version):
			return invalid("versions must strictly increase, %s follows %s", spec.Version, prev.Version)
		case prev.PreRelease == Deprecated && spec.PreRelease != Deprecated:
			return invalid("deprecated feature cannot become %s at version %s", spec.PreRelease, spec.Version)
		case spec.PreRelease != Deprecated && spec.PreRelease.rank() < prev.PreRelease.rank():
			return invalid("stage regresses from %s to %s at version %s", prev.PreRelease, spec.PreRelease, spec.Version)
		}
	}
	return nil
}

// OverrideDefault changes the default of a registered feature at the
// registry's version. It lets a binary adopt a new default ahead of (or
// behind) the other components that share the feature. Explicit settings
// still win over it. It fails for unknown, locked, PreAlpha, AllAlpha and
// AllBeta features, and with ErrClosed after AddFlag or Freeze, because
// the flag usage already printed the old default. Overriding the default of
// a deprecated or GA feature logs a warning.
func (r *Registry) OverrideDefault(f Feature, def bool) error {
	stage, err := r.overrideDefault(f, def)
	if err != nil {
		return err
	}
	if stage == Deprecated || stage == GA {
		r.logger.Warn("overriding the default of a "+stageWord(stage)+" feature gate; it will be removed in a future release",
			"feature", string(f), "default", def)
	}
	return nil
}

func (r *Registry) overrideDefault(f Feature, def bool) (Stage, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return "", &gateError{fmt.Sprintf("cannot override default for feature %q: gates already added to a flag set or frozen", f), ErrClosed}
	}
	specs, ok := r.known[f]
	if !ok {
		return "", &gateError{fmt.Sprintf("cannot override default: unrecognized feature gate: %s", f), ErrUnknownFeature}
	}
	if f == AllAlpha || f == AllBeta {
		return "", &gateError{fmt.Sprintf("cannot override default of %s: it only acts when set", f), ErrInvalidSpec}
	}
	spec := specs.at(r.version)
	switch {
	case spec.LockToDefault:
		return "", &gateError{fmt.Sprintf("cannot override default: feature %q default is locked to %t", f, spec.Default), ErrLocked}
	case spec.PreRelease == PreAlpha:
		return "", &gateError{fmt.Sprintf("cannot override default: feature %q is not available at version %s", f, r.version), ErrNotAvailable}
	}
	r.defaults[f] = def
	r.publishLocked()
	return spec.PreRelease, nil
}

// SetFromMap sets features by name. Every name must be a registered feature
// (or AllAlpha/AllBeta) that exists at the registry's version, and a locked
// feature can only be set to its default. Settings add to earlier ones: a
// feature set before and not named here keeps its value. Setting a
// deprecated or GA feature logs a warning, as Kubernetes does.
//
// Either every setting is applied or, on error, none is; the error lists
// every bad setting. SetFromMap returns ErrFrozen after Freeze.
func (r *Registry) SetFromMap(m map[string]bool) error {
	warn, err := r.setFromMap(m)
	if err != nil {
		return err
	}
	// Logged outside the lock, so that a handler may read the registry.
	for _, w := range warn {
		r.logger.Warn("setting "+stageWord(w.stage)+" feature gate; it will be removed in a future release",
			"feature", string(w.f), "value", m[string(w.f)])
	}
	return nil
}

type warning struct {
	f     Feature
	stage Stage
}

func (r *Registry) setFromMap(m map[string]bool) ([]warning, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.frozen {
		return nil, &gateError{"cannot set feature gates: the registry is frozen", ErrFrozen}
	}
	names := slices.Sorted(maps.Keys(m))
	var errs []error
	var warn []warning
	for _, k := range names {
		f, v := Feature(k), m[k]
		specs, ok := r.known[f]
		if !ok {
			errs = append(errs, &gateError{"unrecognized feature gate: " + k, ErrUnknownFeature})
			continue
		}
		spec := specs.at(r.version)
		switch {
		case spec.LockToDefault && spec.Default != v:
			errs = append(errs, &gateError{fmt.Sprintf("cannot set feature gate %s to %t, feature is locked to %t", k, v, spec.Default), ErrLocked})
		case spec.PreRelease == PreAlpha:
			errs = append(errs, &gateError{fmt.Sprintf("cannot set feature gate %s to %t, feature is PreAlpha at emulated version %s", k, v, r.version), ErrNotAvailable})
		case spec.PreRelease == Deprecated || spec.PreRelease == GA:
			warn = append(warn, warning{f, spec.PreRelease})
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	for _, k := range names {
		r.explicit[Feature(k)] = m[k]
	}
	r.publishLocked()
	return warn, nil
}

func stageWord(s Stage) string {
	if s == Deprecated {
		return "deprecated"
	}
	return string(s)
}

// FeatureStatus is one feature's state at the registry's version.
type FeatureStatus struct {
	Name Feature
	// Spec is the spec in effect at the registry's version, with Default
	// replaced by an OverrideDefault value if there is one.
	Spec FeatureSpec
	// Enabled is what Enabled(Name) reports.
	Enabled bool
	// Explicit is whether Set or SetFromMap gave the feature a value.
	Explicit bool
}

// Features returns the state of every feature that exists at the
// registry's version (PreAlpha features are left out; AllAlpha and AllBeta
// are in), sorted by name. It is meant for status pages and for the
// kubernetes_feature_enabled{name,stage} metric. The caller owns the slice.
func (r *Registry) Features() []FeatureStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	snap := r.snap.Load()
	var out []FeatureStatus
	for _, name := range slices.Sorted(maps.Keys(r.known)) {
		spec := r.specLocked(name)
		if spec.PreRelease == PreAlpha {
			continue
		}
		_, explicit := r.explicit[name]
		out = append(out, FeatureStatus{Name: name, Spec: spec, Enabled: snap.enabled[name], Explicit: explicit})
	}
	return out
}

// specLocked returns the spec of a known feature in effect at the
// registry's version, with its default override applied.
func (r *Registry) specLocked(name Feature) FeatureSpec {
	spec := r.known[name].at(r.version)
	if d, ok := r.defaults[name]; ok {
		spec.Default = d
	}
	return spec
}

// Freeze closes the registry for good and returns its final state as
// read-only Gates to hand to components. The returned Gates is immutable:
// it cannot be converted back into something that sets gates. After
// Freeze, Add, AddVersioned and OverrideDefault return ErrClosed and Set
// and SetFromMap return ErrFrozen. Freeze is idempotent.
func (r *Registry) Freeze() Gates {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed, r.frozen = true, true
	return frozenGates{r.snap.Load()}
}

// DeepCopy returns an open registry with the same version, logger,
// features, overridden defaults and settings, which can be changed without
// touching r: for example to check a new --feature-gates value before
// applying it.
func (r *Registry) DeepCopy() *Registry {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := &Registry{
		version:  r.version,
		logger:   r.logger,
		known:    maps.Clone(r.known), // the spec slices are never modified, so sharing them is safe
		defaults: maps.Clone(r.defaults),
		explicit: maps.Clone(r.explicit),
	}
	c.mu.Lock()
	c.publishLocked()
	c.mu.Unlock()
	return c
}
