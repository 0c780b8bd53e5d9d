package replicaset

import (
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/kplane/kplane/pkg/featuregate"
)

// DeploymentReplicaSetTerminatingReplicas makes the controller report in
// status.terminatingReplicas how many of its pods are being deleted and
// have not finished (as Kubernetes does from 1.35, where it is beta and on
// by default). Off: the field is left unset.
const DeploymentReplicaSetTerminatingReplicas featuregate.Feature = "DeploymentReplicaSetTerminatingReplicas"

// Features returns the specs of the features the controller reads, for
// cmd/ to add to its registry. Every call returns a new map.
func Features() map[featuregate.Feature]featuregate.VersionedSpecs {
	return map[featuregate.Feature]featuregate.VersionedSpecs{
		DeploymentReplicaSetTerminatingReplicas: {
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
