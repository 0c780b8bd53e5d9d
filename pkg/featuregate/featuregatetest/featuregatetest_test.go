package featuregatetest

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/kplane/kplane/pkg/featuregate"
)

func specs() map[featuregate.Feature]featuregate.VersionedSpecs {
	return map[featuregate.Feature]featuregate.VersionedSpecs{
		"A": {{Default: false, PreRelease: featuregate.Alpha, Version: version.MajorMinor(1, 0)}},
		"B": {{Default: true, PreRelease: featuregate.Beta, Version: version.MajorMinor(1, 0)}},
		"L": {{Default: true, PreRelease: featuregate.GA, LockToDefault: true, Version: version.MajorMinor(1, 0)}},
	}
}

func TestNew(t *testing.T) {
	g := New(t, featuregate.Config{}, specs(), map[featuregate.Feature]bool{"A": true, "B": false})
	if !g.Enabled("A") || g.Enabled("B") || !g.Enabled("L") {
		t.Errorf("A=%t B=%t L=%t, want true false true", g.Enabled("A"), g.Enabled("B"), g.Enabled("L"))
	}
}

// recorder captures a Fatalf instead of stopping the test.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = format
	if len(args) > 0 {
		r.msg = args[len(args)-1].(error).Error()
	}
}

func TestNewFailsTheTest(t *testing.T) {
	tests := []struct {
		name string
		set  map[featuregate.Feature]bool
		want string
	}{
		{name: "unknown", set: map[featuregate.Feature]bool{"Nope": true}, want: "unrecognized feature gate: Nope"},
		{name: "locked", set: map[featuregate.Feature]bool{"L": false}, want: "feature is locked to true"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{TB: t}
			New(rec, featuregate.Config{}, specs(), tc.set)
			if !strings.Contains(rec.msg, tc.want) {
				t.Errorf("Fatalf got %q, want it to contain %q", rec.msg, tc.want)
			}
		})
	}
}
