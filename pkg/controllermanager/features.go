package controllermanager

import (
	"maps"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/kplane/kplane/pkg/controllers/replicaset"
	"github.com/kplane/kplane/pkg/controllers/statefulset"
	"github.com/kplane/kplane/pkg/featuregate"
)

// WatchListClient makes the informers stream their initial state with one
// watch (sendInitialEvents=true, ended by a bookmark) instead of a List
// followed by a Watch. Beta, on by default. Off: informers List then Watch.
const WatchListClient featuregate.Feature = "WatchListClient"

// ControllerPriorityQueue gives the controllers priority work queues, so
// the adds of informers' initial lists and resyncs wait behind the work
// real changes cause. Beta, on by default. Off: plain rate-limiting FIFO
// queues. The garbage collector's queues are FIFO either way.
const ControllerPriorityQueue featuregate.Feature = "ControllerPriorityQueue"

// Features returns the specs of the features the manager and its
// controllers read (replicaset.Features and statefulset.Features included), for cmd/ to add to its
// registry. Config.Gates must know them all: an unknown feature reads as
// off. Every call returns a new map.
func Features() map[featuregate.Feature]featuregate.VersionedSpecs {
	out := map[featuregate.Feature]featuregate.VersionedSpecs{
		WatchListClient: {
			{Default: true, PreRelease: featuregate.Beta, Version: version.MajorMinor(0, 1)},
		},
		ControllerPriorityQueue: {
			{Default: true, PreRelease: featuregate.Beta, Version: version.MajorMinor(0, 1)},
		},
	}
	maps.Copy(out, replicaset.Features())
	maps.Copy(out, statefulset.Features())
	return out
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
