package statefulset

import (
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/kplane/kplane/pkg/featuregate"
)

// MaxUnavailableStatefulSet makes rolling updates take down up to
// spec.updateStrategy.rollingUpdate.maxUnavailable pods at once (beta and
// on by default since Kubernetes 1.35). Off: one pod at a time, whatever
// the field says.
const MaxUnavailableStatefulSet featuregate.Feature = "MaxUnavailableStatefulSet"

// Features returns the specs of the features the controller reads, for
// cmd/ to add to its registry. Every call returns a new map.
func Features() map[featuregate.Feature]featuregate.VersionedSpecs {
	return map[featuregate.Feature]featuregate.VersionedSpecs{
		MaxUnavailableStatefulSet: {
			{Default: true, PreRelease: featuregate.Beta, Version: version.MajorMinor(0, 1)},
		},
	}
}

// defaultGates returns Gates holding Features at their defaults.
func defaultGates() (featuregate.Gates, error) {
	reg, err := featuregate.New(featuregate.Config{})
	if err != nil {
		return nil, err
	}
	if err := reg.AddVersioned(Features()); err != nil {
		return nil, err
	}
	return reg.Freeze(), nil
}
