// Package featuregate turns features on and off by name, the way
// Kubernetes components do with --feature-gates=A=true,B=false.
//
// A feature has a stage (Alpha, Beta, GA, Deprecated), a default, and may be
// locked to its default. Its spec may change with the component version
// (VersionedSpecs): a Registry resolves every feature against the version in
// its Config, so a binary can behave as an older release would.
//
// Two types split the job:
//
//   - Registry is mutable and belongs to cmd/ alone: it registers the
//     features of the components it runs, is bound to the --feature-gates
//     flag (AddFlag), takes settings (Set, SetFromMap), and is then frozen.
//   - Gates is the read-only interface components take in their Config.
//     They never set gates; their tests get Gates from
//     featuregatetest.New, which builds and freezes a Registry. There are no package-level registries and no
//     init-time registration.
//
// Guarantees:
//
//   - Precedence: a feature's value is its explicit setting if it has one,
//     else the AllAlpha/AllBeta setting if the feature is at that stage and
//     unlocked, else its default (as overridden by OverrideDefault) at the
//     registry's version. The order in which settings arrive does not
//     matter, only which ones were given.
//   - Locks hold: a LockToDefault feature always reports its default;
//     setting it to the other value is an error.
//   - Unknown means off: Enabled of a feature nobody registered is false.
//     Setting an unknown feature is an error ("unrecognized feature gate: X").
//   - All or nothing: a rejected Add, AddVersioned, Set or SetFromMap
//     changes nothing, and its error lists every bad item, with errors.Is
//     kinds (ErrUnknownFeature, ErrLocked, ...).
//   - Phases: additions and default overrides end at AddFlag or Freeze;
//     settings end at Freeze. Nothing reopens a registry.
//   - Concurrency: every method is safe for concurrent use. Readers see
//     immutable snapshots published atomically, so Enabled takes no lock,
//     never blocks and never allocates, and never sees half a Set.
//   - Warnings: setting a deprecated or GA feature, or overriding its
//     default, logs a warning to Config.Logger.
//
// Unlike Kubernetes, Enabled does not panic on an unknown feature (it
// reports false), the GA stage is spelled "GA" and a spec without a stage
// is rejected rather than taken as GA, and feature dependencies are not
// modelled.
package featuregate
