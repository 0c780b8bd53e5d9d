// Package disruption is the disruption controller: it keeps the status of
// every PodDisruptionBudget, with the semantics of the Kubernetes controller
// of the same name, so that evictions can be judged against it.
//
// Guarantees:
//   - Pods: a budget covers the pods of its namespace its selector matches
//     (a nil selector matches none, an empty one every pod).
//   - expectedPods: with an integer minAvailable, the number of covered
//     pods. With a percentage minAvailable or any maxUnavailable, the sum of
//     the scales of the controllers of the covered pods, each controller
//     once: a Deployment (through its ReplicaSet), a ReplicaSet, a
//     StatefulSet or a ReplicationController read from the informers, and
//     any other controller through its scale subresource (custom resources
//     included), found with the RESTMapper. Pods without a controller are
//     left out and reported with an UnmanagedPods event.
//   - currentHealthy counts the covered pods that are Ready and neither
//     being deleted nor listed in disruptedPods; desiredHealthy is
//     minAvailable, or expectedPods less maxUnavailable (at least 0);
//     percentages round up. disruptionsAllowed is currentHealthy less
//     desiredHealthy, and 0 when that is negative or expectedPods is 0.
//   - disruptedPods (written by the eviction subresource) lose the pods
//     being deleted, gone, or listed more than DeletionTimeout (2 minutes)
//     ago; a budget with listed pods is looked at again when the earliest
//     entry expires.
//   - The DisruptionAllowed condition is True (SufficientPods) when
//     disruptions are allowed and False (InsufficientPods) when not;
//     observedGeneration is the budget's generation. When the status cannot
//     be computed (a covered pod's controller is not found, a scale cannot
//     be read), the controller fails safe: disruptionsAllowed 0 and the
//     condition False with reason SyncFailed and the error as its message.
//   - unhealthyPodEvictionPolicy does not change the status: it is read by
//     the eviction subresource alone.
//   - Status is written through the status subresource only when it
//     changed.
//
// The controller reads budgets, pods and the built-in controllers from a
// shared informers.Factory and does not start it. Run waits for the
// caches, runs the workers until its context ends and returns once they
// have exited.
package disruption
