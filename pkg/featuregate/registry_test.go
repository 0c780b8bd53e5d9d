package featuregate

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/version"
)

func v(s string) *version.Version { return version.MustParse(s) }

// The features most tests use, one per interesting kind.
const (
	alphaOff   Feature = "AlphaOff"
	betaOn     Feature = "BetaOn"
	betaOff    Feature = "BetaOff"
	gaLocked   Feature = "GALocked"
	gaOpen     Feature = "GAOpen"
	deprecated Feature = "OldThing"
	alphaLock  Feature = "AlphaLocked"
	promoted   Feature = "Promoted" // alpha in 1.1, beta in 1.2, GA locked in 1.3
)

func testFeatures() map[Feature]VersionedSpecs {
	return map[Feature]VersionedSpecs{
		alphaOff:   {{Default: false, PreRelease: Alpha, Version: v("1.0")}},
		betaOn:     {{Default: true, PreRelease: Beta, Version: v("1.0")}},
		betaOff:    {{Default: false, PreRelease: Beta, Version: v("1.0")}},
		gaLocked:   {{Default: true, PreRelease: GA, LockToDefault: true, Version: v("1.0")}},
		gaOpen:     {{Default: true, PreRelease: GA, Version: v("1.0")}},
		deprecated: {{Default: false, PreRelease: Deprecated, Version: v("1.0")}},
		alphaLock:  {{Default: true, PreRelease: Alpha, LockToDefault: true, Version: v("1.0")}},
		promoted: {
			{Default: false, PreRelease: Alpha, Version: v("1.1")},
			{Default: true, PreRelease: Beta, Version: v("1.2")},
			{Default: true, PreRelease: GA, LockToDefault: true, Version: v("1.3")},
		},
	}
}

// newRegistry returns a registry holding testFeatures at ver.
func newRegistry(tb testing.TB, ver *version.Version, logger *slog.Logger) *Registry {
	tb.Helper()
	r, err := New(Config{Version: ver, Logger: logger})
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	if err := r.AddVersioned(testFeatures()); err != nil {
		tb.Fatalf("AddVersioned: %v", err)
	}
	return r
}

func values(g Gates) map[Feature]bool {
	out := map[Feature]bool{}
	for f := range testFeatures() {
		out[f] = g.Enabled(f)
	}
	out[AllAlpha] = g.Enabled(AllAlpha)
	out[AllBeta] = g.Enabled(AllBeta)
	return out
}

// want builds the expected values: the defaults at 1.2 with changes applied.
func want(changes map[Feature]bool) map[Feature]bool {
	m := map[Feature]bool{
		alphaOff: false, betaOn: true, betaOff: false, gaLocked: true, gaOpen: true,
		deprecated: false, alphaLock: true, promoted: true, AllAlpha: false, AllBeta: false,
	}
	for k, val := range changes {
		m[k] = val
	}
	return m
}

func TestSet(t *testing.T) {
	tests := []struct {
		name string
		sets []string // applied in order, each must succeed
		want map[Feature]bool
	}{
		{name: "defaults", want: want(nil)},
		{name: "empty value", sets: []string{""}, want: want(nil)},
		{name: "one feature", sets: []string{"AlphaOff=true"}, want: want(map[Feature]bool{alphaOff: true})},
		{name: "two features with spaces and empty items", sets: []string{" AlphaOff = true ,, BetaOn=false,"},
			want: want(map[Feature]bool{alphaOff: true, betaOn: false})},
		{name: "ParseBool spellings", sets: []string{"AlphaOff=1,BetaOn=F"}, want: want(map[Feature]bool{alphaOff: true, betaOn: false})},
		{name: "last of a repeated name wins", sets: []string{"AlphaOff=true,AlphaOff=false"}, want: want(nil)},
		{name: "later Set adds to earlier", sets: []string{"AlphaOff=true", "BetaOn=false"},
			want: want(map[Feature]bool{alphaOff: true, betaOn: false})},
		{name: "later Set overrides earlier", sets: []string{"AlphaOff=true", "AlphaOff=false"}, want: want(nil)},
		{name: "locked feature to its default", sets: []string{"GALocked=true,AlphaLocked=true"}, want: want(nil)},
		{name: "unlocked GA feature off", sets: []string{"GAOpen=false"}, want: want(map[Feature]bool{gaOpen: false})},
		{name: "deprecated feature on", sets: []string{"OldThing=true"}, want: want(map[Feature]bool{deprecated: true})},
		{name: "AllAlpha sets unlocked alpha features", sets: []string{"AllAlpha=true"},
			want: want(map[Feature]bool{AllAlpha: true, alphaOff: true})},
		{name: "AllAlpha=false turns nothing on", sets: []string{"AllAlpha=false"}, want: want(nil)},
		{name: "AllBeta=false turns beta off", sets: []string{"AllBeta=false"},
			want: want(map[Feature]bool{betaOn: false, promoted: false})},
		{name: "AllBeta=true", sets: []string{"AllBeta=true"},
			want: want(map[Feature]bool{AllBeta: true, betaOff: true})},
		{name: "explicit beats AllAlpha in the same value", sets: []string{"AllAlpha=true,AlphaOff=false"},
			want: want(map[Feature]bool{AllAlpha: true})},
		{name: "explicit beats AllAlpha whatever the order", sets: []string{"AlphaOff=false,AllAlpha=true"},
			want: want(map[Feature]bool{AllAlpha: true})},
		{name: "explicit set earlier beats a later AllBeta", sets: []string{"BetaOff=false", "AllBeta=true"},
			want: want(map[Feature]bool{AllBeta: true})},
		{name: "explicit set later beats an earlier AllBeta", sets: []string{"AllBeta=false", "BetaOn=true"},
			want: want(map[Feature]bool{betaOn: true, promoted: false})},
		{name: "AllAlpha and AllBeta together", sets: []string{"AllAlpha=true,AllBeta=false"},
			want: want(map[Feature]bool{AllAlpha: true, alphaOff: true, betaOn: false, promoted: false})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegistry(t, v("1.2"), nil)
			for _, s := range tc.sets {
				if err := r.Set(s); err != nil {
					t.Fatalf("Set(%q): %v", s, err)
				}
			}
			if diff := cmp.Diff(tc.want, values(r)); diff != "" {
				t.Errorf("Enabled (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, values(r.Freeze())); diff != "" {
				t.Errorf("frozen Enabled (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSetErrors(t *testing.T) {
	tests := []struct {
		name    string
		value   string
		wantErr []string // substrings, each must appear
		kinds   []error
	}{
		{name: "unknown feature", value: "Nope=true",
			wantErr: []string{"unrecognized feature gate: Nope"}, kinds: []error{ErrUnknownFeature}},
		{name: "unknown is case-sensitive", value: "alphaoff=true",
			wantErr: []string{"unrecognized feature gate: alphaoff"}, kinds: []error{ErrUnknownFeature}},
		{name: "missing value", value: "AlphaOff",
			wantErr: []string{"missing bool value for AlphaOff"}, kinds: []error{ErrInvalidValue}},
		{name: "bad value", value: "AlphaOff=yes",
			wantErr: []string{"invalid value of AlphaOff=yes, want true or false"}, kinds: []error{ErrInvalidValue}},
		{name: "empty value", value: "AlphaOff=",
			wantErr: []string{"invalid value of AlphaOff="}, kinds: []error{ErrInvalidValue}},
		{name: "missing name", value: "=true",
			wantErr: []string{`missing feature name in "=true"`}, kinds: []error{ErrInvalidValue}},
		{name: "bad item spoils good ones", value: "BetaOn=false,AlphaOff=maybe",
			wantErr: []string{"invalid value of AlphaOff=maybe"}, kinds: []error{ErrInvalidValue}},
		{name: "locked GA feature off", value: "GALocked=false",
			wantErr: []string{"cannot set feature gate GALocked to false, feature is locked to true"}, kinds: []error{ErrLocked}},
		{name: "locked alpha feature off", value: "AlphaLocked=false",
			wantErr: []string{"cannot set feature gate AlphaLocked to false, feature is locked to true"}, kinds: []error{ErrLocked}},
		{name: "every bad setting is reported and good ones are not applied", value: "BetaOn=false,Nope=true,GALocked=false,Zip=false",
			wantErr: []string{"unrecognized feature gate: Nope", "unrecognized feature gate: Zip", "feature is locked to true"},
			kinds:   []error{ErrUnknownFeature, ErrLocked}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			r := newRegistry(t, v("1.2"), slog.New(slog.NewTextHandler(&logs, nil)))
			if err := r.Set("AlphaOff=true"); err != nil {
				t.Fatal(err)
			}
			before, beforeStr := values(r), r.String()
			err := r.Set(tc.value)
			if err == nil {
				t.Fatalf("Set(%q) succeeded", tc.value)
			}
			for _, s := range tc.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
			for _, k := range tc.kinds {
				if !errors.Is(err, k) {
					t.Errorf("error %q is not %v", err, k)
				}
			}
			if diff := cmp.Diff(before, values(r)); diff != "" {
				t.Errorf("rejected Set changed values (-before +after):\n%s", diff)
			}
			if got := r.String(); got != beforeStr {
				t.Errorf("rejected Set changed String from %q to %q", beforeStr, got)
			}
			if logs.Len() != 0 {
				t.Errorf("rejected Set logged: %s", logs.String())
			}
		})
	}
}

func TestVersions(t *testing.T) {
	tests := []struct {
		version     *version.Version
		enabled     bool
		stage       string // in KnownFeatures, "" if not listed
		setErr      error  // of Set("Promoted=false")
		setTrueKind error  // of Set("Promoted=true")
	}{
		{version: v("1.0"), enabled: false, setErr: ErrNotAvailable, setTrueKind: ErrNotAvailable},
		{version: v("1.1"), enabled: false, stage: "Promoted=true|false (ALPHA - default=false)"},
		{version: v("1.1.7"), enabled: false, stage: "Promoted=true|false (ALPHA - default=false)"},
		{version: v("1.2"), enabled: true, stage: "Promoted=true|false (BETA - default=true)"},
		{version: v("1.3"), enabled: true, setErr: ErrLocked},
		{version: v("2.0"), enabled: true, setErr: ErrLocked},
		{version: nil, enabled: true, setErr: ErrLocked},
	}
	for _, tc := range tests {
		t.Run(tc.version.String(), func(t *testing.T) {
			r := newRegistry(t, tc.version, nil)
			if got := r.Enabled(promoted); got != tc.enabled {
				t.Errorf("Enabled(Promoted) = %t, want %t", got, tc.enabled)
			}
			var listed string
			for _, line := range r.KnownFeatures() {
				if strings.HasPrefix(line, "Promoted=") {
					listed = line
				}
			}
			if listed != tc.stage {
				t.Errorf("KnownFeatures lists %q, want %q", listed, tc.stage)
			}
			if err := r.Set("Promoted=false"); !errors.Is(err, tc.setErr) || (err == nil) != (tc.setErr == nil) {
				t.Errorf("Set(Promoted=false) = %v, want %v", err, tc.setErr)
			}
			if err := r.Set("Promoted=true"); !errors.Is(err, tc.setTrueKind) || (err == nil) != (tc.setTrueKind == nil) {
				t.Errorf("Set(Promoted=true) = %v, want %v", err, tc.setTrueKind)
			}
		})
	}
}

func TestPreAlphaMessage(t *testing.T) {
	r := newRegistry(t, v("1.0.3"), nil)
	err := r.Set("Promoted=true")
	if want := "cannot set feature gate Promoted to true, feature is PreAlpha at emulated version 1.0"; err == nil || err.Error() != want {
		t.Errorf("Set = %v, want %q", err, want)
	}
	// AllAlpha does not reach a feature that does not exist yet.
	if err := r.Set("AllAlpha=true"); err != nil {
		t.Fatal(err)
	}
	if r.Enabled(promoted) {
		t.Error("AllAlpha turned on a PreAlpha feature")
	}
	if !r.Enabled(alphaOff) {
		t.Error("AllAlpha did not turn on an alpha feature")
	}
}

func TestAddValidation(t *testing.T) {
	tests := []struct {
		name    string
		feature Feature
		specs   VersionedSpecs
		wantErr string
	}{
		{name: "empty name", feature: "", specs: VersionedSpecs{{PreRelease: Alpha, Version: v("1.0")}},
			wantErr: "feature name must not be empty"},
		{name: "name with =", feature: "A=B", specs: VersionedSpecs{{PreRelease: Alpha, Version: v("1.0")}},
			wantErr: "must not contain"},
		{name: "name with comma", feature: "A,B", specs: VersionedSpecs{{PreRelease: Alpha, Version: v("1.0")}},
			wantErr: "must not contain"},
		{name: "name with space", feature: "A B", specs: VersionedSpecs{{PreRelease: Alpha, Version: v("1.0")}},
			wantErr: "must not contain"},
		{name: "no specs", feature: "X", specs: nil, wantErr: `feature "X": no specs given`},
		{name: "no version", feature: "X", specs: VersionedSpecs{{PreRelease: Alpha}},
			wantErr: "spec 0 has no version"},
		{name: "patch version", feature: "X", specs: VersionedSpecs{{PreRelease: Alpha, Version: v("1.2.3")}},
			wantErr: "version 1.2.3 must be major.minor only"},
		{name: "missing stage", feature: "X", specs: VersionedSpecs{{Default: true, Version: v("1.0")}},
			wantErr: `unknown stage ""`},
		{name: "PreAlpha is not registrable", feature: "X", specs: VersionedSpecs{{PreRelease: PreAlpha, Version: v("1.0")}},
			wantErr: `unknown stage "PRE-ALPHA"`},
		{name: "unsorted", feature: "X", specs: VersionedSpecs{
			{PreRelease: Alpha, Version: v("1.2")}, {PreRelease: Beta, Version: v("1.1")}},
			wantErr: "versions must strictly increase, 1.1 follows 1.2"},
		{name: "same version twice", feature: "X", specs: VersionedSpecs{
			{PreRelease: Alpha, Version: v("1.2")}, {PreRelease: Beta, Version: v("1.2")}},
			wantErr: "versions must strictly increase"},
		{name: "beta back to alpha", feature: "X", specs: VersionedSpecs{
			{PreRelease: Beta, Version: v("1.1")}, {PreRelease: Alpha, Version: v("1.2")}},
			wantErr: "stage regresses from BETA to ALPHA at version 1.2"},
		{name: "GA back to beta", feature: "X", specs: VersionedSpecs{
			{PreRelease: GA, Version: v("1.1")}, {PreRelease: Beta, Version: v("1.2")}},
			wantErr: "stage regresses from GA to BETA"},
		{name: "deprecated is terminal", feature: "X", specs: VersionedSpecs{
			{PreRelease: Deprecated, Version: v("1.1")}, {PreRelease: GA, Version: v("1.2")}},
			wantErr: "deprecated feature cannot become GA at version 1.2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegistry(t, v("1.2"), nil)
			before := r.KnownFeatures()
			err := r.AddVersioned(map[Feature]VersionedSpecs{tc.feature: tc.specs, "GoodOne": {{PreRelease: Alpha, Version: v("1.0")}}})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("AddVersioned = %v, want error containing %q", err, tc.wantErr)
			}
			if !errors.Is(err, ErrInvalidSpec) {
				t.Errorf("error %v is not ErrInvalidSpec", err)
			}
			if diff := cmp.Diff(before, r.KnownFeatures()); diff != "" {
				t.Errorf("rejected AddVersioned changed the features (-before +after):\n%s", diff)
			}
		})
	}
}

func TestAddValidSpecs(t *testing.T) {
	tests := []struct {
		name  string
		specs VersionedSpecs
	}{
		{name: "alpha beta GA deprecated", specs: VersionedSpecs{
			{PreRelease: Alpha, Version: v("1.0")}, {PreRelease: Beta, Version: v("1.1")},
			{PreRelease: GA, Version: v("1.2")}, {PreRelease: Deprecated, Version: v("1.3")}}},
		{name: "beta straight to deprecated", specs: VersionedSpecs{
			{PreRelease: Beta, Version: v("1.0")}, {PreRelease: Deprecated, Version: v("1.1")}}},
		{name: "stays deprecated", specs: VersionedSpecs{
			{PreRelease: Deprecated, Version: v("1.0")}, {Default: true, PreRelease: Deprecated, Version: v("1.1")}}},
		{name: "same stage, new default", specs: VersionedSpecs{
			{PreRelease: Beta, Version: v("1.0")}, {Default: true, PreRelease: Beta, Version: v("1.1")}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegistry(t, v("1.2"), nil)
			if err := r.AddVersioned(map[Feature]VersionedSpecs{"X": tc.specs}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestAddDuplicates(t *testing.T) {
	r, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	spec := FeatureSpec{Default: true, PreRelease: Beta}
	if err := r.Add(map[Feature]FeatureSpec{"Shared": spec}); err != nil {
		t.Fatal(err)
	}
	if err := r.Add(map[Feature]FeatureSpec{"Shared": spec}); err != nil {
		t.Errorf("adding the same spec again: %v", err)
	}
	// Add's specs are version 0.0 underneath; the same history is the same feature.
	if err := r.AddVersioned(map[Feature]VersionedSpecs{"Shared": {{Default: true, PreRelease: Beta, Version: v("0.0")}}}); err != nil {
		t.Errorf("adding the same spec as versioned: %v", err)
	}
	// A conflicting batch adds nothing, not even its good features.
	err = r.Add(map[Feature]FeatureSpec{"Shared": {Default: false, PreRelease: Beta}, "Fresh": {PreRelease: Alpha}})
	if want := `feature gate "Shared" with different spec already exists`; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Add conflicting = %v, want %q", err, want)
	}
	if !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("error %v is not ErrInvalidSpec", err)
	}
	if err := r.Set("Fresh=true"); !errors.Is(err, ErrUnknownFeature) {
		t.Errorf("the good half of a rejected Add was registered: Set = %v", err)
	}
	if !r.Enabled("Shared") {
		t.Error("a rejected Add changed the existing feature")
	}
	// The special gates are registered from the start, with their own spec.
	if err := r.Add(map[Feature]FeatureSpec{AllAlpha: {Default: true, PreRelease: Alpha}}); !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("redefining AllAlpha = %v, want ErrInvalidSpec", err)
	}
	if err := r.Add(map[Feature]FeatureSpec{"V": {PreRelease: Alpha, Version: v("1.0")}}); !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("Add with a version = %v, want ErrInvalidSpec", err)
	}
}

func TestAddCopiesSpecs(t *testing.T) {
	r := newRegistry(t, v("1.2"), nil)
	specs := VersionedSpecs{{Default: false, PreRelease: Alpha, Version: v("1.0")}}
	if err := r.AddVersioned(map[Feature]VersionedSpecs{"Mine": specs}); err != nil {
		t.Fatal(err)
	}
	specs[0].Default = true
	if err := r.Set("AlphaOff=true"); err != nil { // forces a new snapshot
		t.Fatal(err)
	}
	if r.Enabled("Mine") {
		t.Error("changing the caller's slice after AddVersioned changed the feature")
	}
}

func TestWarnings(t *testing.T) {
	tests := []struct {
		name  string
		value string
		want  []string // log lines contain these, in order; nil means no log
	}{
		{name: "alpha and beta are quiet", value: "AlphaOff=true,BetaOn=false,AllAlpha=true"},
		{name: "deprecated", value: "OldThing=true",
			want: []string{`msg="setting deprecated feature gate; it will be removed in a future release" feature=OldThing value=true`}},
		{name: "GA, even to its default", value: "GALocked=true,GAOpen=false",
			want: []string{
				`msg="setting GA feature gate; it will be removed in a future release" feature=GALocked value=true`,
				`msg="setting GA feature gate; it will be removed in a future release" feature=GAOpen value=false`,
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			r := newRegistry(t, v("1.2"), slog.New(slog.NewTextHandler(&logs, nil)))
			if err := r.Set(tc.value); err != nil {
				t.Fatal(err)
			}
			var lines []string
			if s := strings.TrimSpace(logs.String()); s != "" {
				lines = strings.Split(s, "\n")
			}
			if len(lines) != len(tc.want) {
				t.Fatalf("logged %d lines, want %d:\n%s", len(lines), len(tc.want), logs.String())
			}
			for i, w := range tc.want {
				if !strings.Contains(lines[i], "level=WARN") || !strings.Contains(lines[i], w) {
					t.Errorf("line %d = %s, want a warning containing %s", i, lines[i], w)
				}
			}
		})
	}
}

func TestOverrideDefault(t *testing.T) {
	tests := []struct {
		name     string
		feature  Feature
		def      bool
		kind     error
		wantErr  string
		wantWarn bool
	}{
		{name: "alpha on", feature: alphaOff, def: true},
		{name: "beta off", feature: betaOn, def: false},
		{name: "unlocked GA warns", feature: gaOpen, def: false, wantWarn: true},
		{name: "deprecated warns", feature: deprecated, def: true, wantWarn: true},
		{name: "locked", feature: gaLocked, def: false, kind: ErrLocked,
			wantErr: `cannot override default: feature "GALocked" default is locked to true`},
		{name: "unknown", feature: "Nope", def: true, kind: ErrUnknownFeature,
			wantErr: "cannot override default: unrecognized feature gate: Nope"},
		{name: "AllAlpha", feature: AllAlpha, def: true, kind: ErrInvalidSpec},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			r := newRegistry(t, v("1.2"), slog.New(slog.NewTextHandler(&logs, nil)))
			before := r.Enabled(tc.feature)
			err := r.OverrideDefault(tc.feature, tc.def)
			if tc.kind != nil {
				if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("OverrideDefault = %v, want %v containing %q", err, tc.kind, tc.wantErr)
				}
				if r.Enabled(tc.feature) != before {
					t.Error("a rejected override changed the value")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Enabled(tc.feature); got != tc.def {
				t.Errorf("Enabled = %t after overriding the default to %t", got, tc.def)
			}
			if gotWarn := strings.Contains(logs.String(), "level=WARN"); gotWarn != tc.wantWarn {
				t.Errorf("warned = %t, want %t: %s", gotWarn, tc.wantWarn, logs.String())
			}
			// An explicit setting still wins over the new default.
			if err := r.SetFromMap(map[string]bool{string(tc.feature): !tc.def}); err != nil {
				t.Fatal(err)
			}
			if r.Enabled(tc.feature) == tc.def {
				t.Error("explicit setting lost to the overridden default")
			}
		})
	}
}

func TestOverrideDefaultShownInUsageAndAllBeta(t *testing.T) {
	r := newRegistry(t, v("1.2"), nil)
	if err := r.OverrideDefault(betaOff, true); err != nil {
		t.Fatal(err)
	}
	if !containsLine(r.KnownFeatures(), "BetaOff=true|false (BETA - default=true)") {
		t.Errorf("KnownFeatures does not show the new default: %q", r.KnownFeatures())
	}
	if err := r.Set("AllBeta=false"); err != nil {
		t.Fatal(err)
	}
	if r.Enabled(betaOff) {
		t.Error("AllBeta=false did not reach a feature with an overridden default")
	}
	if err := r.OverrideDefault("Promoted", false); err != nil {
		t.Fatal(err)
	}
	r2 := newRegistry(t, v("1.0"), nil)
	if err := r2.OverrideDefault(promoted, true); !errors.Is(err, ErrNotAvailable) {
		t.Errorf("overriding a PreAlpha feature = %v, want ErrNotAvailable", err)
	}
}

func containsLine(lines []string, want string) bool {
	for _, l := range lines {
		if l == want {
			return true
		}
	}
	return false
}

func TestPhases(t *testing.T) {
	r := newRegistry(t, v("1.2"), nil)
	add := func() error { return r.Add(map[Feature]FeatureSpec{"Late": {PreRelease: Alpha}}) }
	override := func() error { return r.OverrideDefault(alphaOff, true) }

	// Open: everything works.
	if err := r.Add(map[Feature]FeatureSpec{"Early": {PreRelease: Alpha}}); err != nil {
		t.Fatal(err)
	}
	if err := r.Set("Early=true"); err != nil {
		t.Fatal(err)
	}

	// Closed by AddFlag: additions and overrides fail, settings work.
	r.AddFlag(pflag.NewFlagSet("test", pflag.ContinueOnError))
	if err := add(); !errors.Is(err, ErrClosed) {
		t.Errorf("Add after close = %v, want ErrClosed", err)
	}
	if err := override(); !errors.Is(err, ErrClosed) {
		t.Errorf("OverrideDefault after close = %v, want ErrClosed", err)
	}
	if err := r.Set("BetaOn=false"); err != nil {
		t.Errorf("Set after close: %v", err)
	}

	// Frozen: settings fail too, the frozen view keeps its values.
	g := r.Freeze()
	if err := r.Set("BetaOn=true"); !errors.Is(err, ErrFrozen) {
		t.Errorf("Set after Freeze = %v, want ErrFrozen", err)
	}
	if err := r.SetFromMap(map[string]bool{"AlphaOff": true}); !errors.Is(err, ErrFrozen) {
		t.Errorf("SetFromMap after Freeze = %v, want ErrFrozen", err)
	}
	if err := add(); !errors.Is(err, ErrClosed) {
		t.Errorf("Add after Freeze = %v, want ErrClosed", err)
	}
	if g.Enabled(betaOn) || !g.Enabled("Early") || r.Enabled(betaOn) {
		t.Error("frozen values are not the last settings")
	}
	if _, ok := g.(*Registry); ok {
		t.Error("Freeze returned the mutable registry")
	}
	if _, ok := g.(interface{ Set(string) error }); ok {
		t.Error("frozen gates can be set")
	}
	g2 := r.Freeze() // idempotent
	if diff := cmp.Diff(g.KnownFeatures(), g2.KnownFeatures()); diff != "" {
		t.Errorf("second Freeze differs:\n%s", diff)
	}
}

func TestFreezeCopiesKnownFeatures(t *testing.T) {
	g := newRegistry(t, v("1.2"), nil).Freeze()
	k := g.KnownFeatures()
	k[0] = "changed"
	if g.KnownFeatures()[0] == "changed" {
		t.Error("KnownFeatures returned the gates' own slice")
	}
}

func TestUnknownFeatureIsOff(t *testing.T) {
	r := newRegistry(t, nil, nil)
	if r.Enabled("Nope") || r.Freeze().Enabled("Nope") {
		t.Error("an unknown feature reads as on")
	}
}

func TestDeepCopy(t *testing.T) {
	r := newRegistry(t, v("1.2"), nil)
	if err := r.Set("AlphaOff=true"); err != nil {
		t.Fatal(err)
	}
	if err := r.OverrideDefault(betaOff, true); err != nil {
		t.Fatal(err)
	}
	r.Freeze()
	c := r.DeepCopy()
	if diff := cmp.Diff(values(r), values(c)); diff != "" {
		t.Errorf("copy differs (-orig +copy):\n%s", diff)
	}
	if c.String() != r.String() || !c.ExplicitlySet(alphaOff) || c.Version().String() != "1.2" {
		t.Errorf("copy lost settings or version: %q, %q", c.String(), r.String())
	}
	// The copy is open, and changing it leaves the original alone.
	if err := c.Set("AlphaOff=false,BetaOn=false"); err != nil {
		t.Fatalf("Set on copy: %v", err)
	}
	if err := c.Add(map[Feature]FeatureSpec{"OnlyInCopy": {PreRelease: Alpha}}); err != nil {
		t.Fatalf("Add on copy: %v", err)
	}
	if !r.Enabled(alphaOff) || !r.Enabled(betaOn) || r.ExplicitlySet(betaOn) {
		t.Error("changing the copy changed the original")
	}
	if err := r.Set("OnlyInCopy=true"); err == nil {
		t.Error("a feature added to the copy reached the original")
	}
}

func TestString(t *testing.T) {
	r := newRegistry(t, v("1.2"), nil)
	if got := r.String(); got != "" {
		t.Errorf("String of a fresh registry = %q", got)
	}
	if err := r.Set("BetaOn=false,AllAlpha=true, AlphaOff = 1"); err != nil {
		t.Fatal(err)
	}
	if got, want := r.String(), "AllAlpha=true,AlphaOff=true,BetaOn=false"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	if r.Type() != "mapStringBool" {
		t.Errorf("Type = %q", r.Type())
	}
	// String feeds back into Set.
	c, err := New(Config{Version: v("1.2")})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddVersioned(testFeatures()); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(r.String()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(values(r), values(c)); diff != "" {
		t.Errorf("round trip through String (-orig +copy):\n%s", diff)
	}
}

// TestConcurrentUse runs readers against writers; the race detector checks
// the snapshot handoff, and every value read must be one a writer produced.
func TestConcurrentUse(t *testing.T) {
	r := newRegistry(t, v("1.2"), nil)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				// Written only as true: never false once seen true.
				if r.Enabled(betaOff) && !r.Enabled(betaOff) {
					t.Error("BetaOff went back to false")
				}
				if !r.Enabled(gaLocked) {
					t.Error("locked feature read as false")
				}
				_ = r.KnownFeatures()
			}
		})
	}
	for i := range 200 {
		if err := r.SetFromMap(map[string]bool{"AlphaOff": i%2 == 0, "BetaOff": true}); err != nil {
			t.Error(err)
		}
		_ = r.String()
	}
	close(stop)
	wg.Wait()
}

func TestFeatures(t *testing.T) {
	r := newRegistry(t, v("1.0"), nil)
	if err := r.Set("AlphaOff=true,AllBeta=false"); err != nil {
		t.Fatal(err)
	}
	if err := r.OverrideDefault(betaOff, true); err != nil {
		t.Fatal(err)
	}
	got := r.Features()
	st := func(name Feature, def, lock bool, stage Stage, enabled, explicit bool) FeatureStatus {
		ver := v("1.0")
		if name == AllAlpha || name == AllBeta {
			ver = v("0.0")
		}
		return FeatureStatus{Name: name, Spec: FeatureSpec{Default: def, LockToDefault: lock, PreRelease: stage, Version: ver},
			Enabled: enabled, Explicit: explicit}
	}
	want := []FeatureStatus{ // Promoted does not exist at 1.0
		st(AllAlpha, false, false, Alpha, false, false),
		st(AllBeta, false, false, Beta, false, true),
		st(alphaLock, true, true, Alpha, true, false),
		st(alphaOff, false, false, Alpha, true, true),
		st(betaOff, true, false, Beta, false, false),
		st(betaOn, true, false, Beta, false, false),
		st(gaLocked, true, true, GA, true, false),
		st(gaOpen, true, false, GA, true, false),
		st(deprecated, false, false, Deprecated, false, false),
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b *version.Version) bool { return a.EqualTo(b) })); diff != "" {
		t.Errorf("Features (-want +got):\n%s", diff)
	}
}

func TestEnabledDoesNotAllocate(t *testing.T) {
	r := newRegistry(t, v("1.2"), nil)
	g := r.DeepCopy().Freeze()
	for name, gates := range map[string]Gates{"registry": r, "frozen": g} {
		if n := testing.AllocsPerRun(100, func() {
			_ = gates.Enabled(betaOn)
			_ = gates.Enabled("Unknown")
		}); n != 0 {
			t.Errorf("%s: Enabled allocates %.1f times per call", name, n)
		}
	}
}
