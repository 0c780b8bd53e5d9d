package featuregate_test

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/kplane/kplane/pkg/featuregate"
)

// A component names its features and exports their specs, through a
// function rather than a mutable variable, for cmd/ to add. It holds no
// registry of its own.
const (
	WatchBookmarks featuregate.Feature = "WatchBookmarks"
	FastResync     featuregate.Feature = "FastResync"
	ServerApply    featuregate.Feature = "ServerApply"
)

func ControllerFeatures() map[featuregate.Feature]featuregate.VersionedSpecs {
	return map[featuregate.Feature]featuregate.VersionedSpecs{
		WatchBookmarks: {
			{Default: false, PreRelease: featuregate.Alpha, Version: version.MajorMinor(1, 1)},
			{Default: true, PreRelease: featuregate.Beta, Version: version.MajorMinor(1, 2)},
			{Default: true, PreRelease: featuregate.GA, LockToDefault: true, Version: version.MajorMinor(1, 4)},
		},
		FastResync:  {{Default: false, PreRelease: featuregate.Alpha, Version: version.MajorMinor(1, 2)}},
		ServerApply: {{Default: true, PreRelease: featuregate.Beta, Version: version.MajorMinor(1, 0)}},
	}
}

// The component takes read-only Gates in its Config.
type ControllerConfig struct {
	Gates featuregate.Gates
}

type Controller struct{ gates featuregate.Gates }

func NewController(cfg ControllerConfig) *Controller { return &Controller{gates: cfg.Gates} }

func (c *Controller) ResyncMode() string {
	if c.gates.Enabled(FastResync) {
		return "fast"
	}
	return "normal"
}

// cmd/ owns the one mutable registry: it adds every component's features,
// binds --feature-gates, parses the command line, freezes the registry and
// hands the frozen Gates to the components.
func Example() {
	reg, err := featuregate.New(featuregate.Config{Version: version.MustParse("1.3.0")})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := reg.AddVersioned(ControllerFeatures()); err != nil {
		fmt.Println(err)
		return
	}

	fs := pflag.NewFlagSet("kplane", pflag.ContinueOnError)
	reg.AddFlag(fs)
	if err := fs.Parse([]string{"--feature-gates=AllAlpha=true,ServerApply=false"}); err != nil {
		fmt.Println(err)
		return
	}

	ctrl := NewController(ControllerConfig{Gates: reg.Freeze()})
	fmt.Println("resync:", ctrl.ResyncMode())
	fmt.Println("bookmarks:", ctrl.gates.Enabled(WatchBookmarks))
	fmt.Println("server apply:", ctrl.gates.Enabled(ServerApply))

	// Too late: the components already have their gates.
	fmt.Println(reg.Set("FastResync=false"))
	// Output:
	// resync: fast
	// bookmarks: true
	// server apply: false
	// cannot set feature gates: the registry is frozen
}

// The flag usage lists settable features the way Kubernetes prints them.
func ExampleRegistry_AddFlag() {
	reg, err := featuregate.New(featuregate.Config{Version: version.MajorMinor(1, 2)})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := reg.AddVersioned(ControllerFeatures()); err != nil {
		fmt.Println(err)
		return
	}
	fs := pflag.NewFlagSet("kplane", pflag.ContinueOnError)
	reg.AddFlag(fs)
	usage := fs.Lookup("feature-gates").Usage
	fmt.Println(strings.ReplaceAll(usage, ". Options", ".\nOptions"))
	// Output:
	// A set of key=value pairs that describe feature gates for alpha/experimental features.
	// Options are:
	// AllAlpha=true|false (ALPHA - default=false)
	// AllBeta=true|false (BETA - default=false)
	// FastResync=true|false (ALPHA - default=false)
	// ServerApply=true|false (BETA - default=true)
	// WatchBookmarks=true|false (BETA - default=true)
}

// Settings are checked against each feature's spec at the registry's
// version, and a bad setting changes nothing.
func ExampleRegistry_Set() {
	reg, err := featuregate.New(featuregate.Config{Version: version.MajorMinor(1, 4)})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := reg.AddVersioned(ControllerFeatures()); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(reg.Set("FastResync=true,WatchBookmarks=false"))
	fmt.Println(reg.Set("Bogus=true"))
	fmt.Println(reg.Set("FastResync"))
	fmt.Println(reg.Set("FastResync=true"), reg.String())
	// Output:
	// cannot set feature gate WatchBookmarks to false, feature is locked to true
	// unrecognized feature gate: Bogus
	// missing bool value for FastResync
	// <nil> FastResync=true
}
