// Package replicationcontroller is the ReplicationController controller
// (kube's replication manager): the ReplicaSet controller's logic, run over
// ReplicationControllers converted to ReplicaSets in memory.
//
// Its informer lists and watches ReplicationControllers and holds them as
// ReplicaSets (the map selector becoming matchLabels); the ReplicaSet logic
// of pkg/controllers/replicaset then keeps spec.replicas active pods per
// ReplicationController, with every guarantee documented there:
// expectations, adoption and release of pods through the controller-ref
// manager, bounded slow-start bursts, the order of deletions, and status
// (replicas, fullyLabeledReplicas, readyReplicas, availableReplicas,
// observedGeneration, the ReplicaFailure condition), written back through
// the ReplicationController's status subresource. Pods it creates are
// controlled by the ReplicationController (kind ReplicationController, v1);
// its Events are recorded on the ReplicationController. Scaling
// (`kubectl scale rc`) goes through the scale subresource the API server
// serves: the controller follows spec.replicas.
//
// The informer sits in the shared informers.Factory beside the typed
// ReplicationController informer (a second watch of the same resource when
// both are used). The controller does not start the factory. Run waits for
// the caches, runs the workers until its context ends and returns once they
// have exited.
package replicationcontroller
