// Package replicaset is the ReplicaSet controller: it keeps the number of
// active pods a ReplicaSet controls equal to spec.replicas, and reports
// what it sees in the ReplicaSet's status, with the semantics of the
// Kubernetes controller of the same name.
//
// Guarantees:
//   - Never on a stale cache: after issuing creations or deletions for a
//     ReplicaSet the controller does not create or delete for it again
//     until its pod informer has observed them (or the expectations expire
//     after 5 minutes). Status is still written meanwhile.
//   - Ownership: pods are claimed through controller.RefManager, so
//     matching orphans are adopted, owned pods whose labels stopped
//     matching are released, and pods another controller owns are never
//     touched. Created pods carry an ownerReference with controller and
//     blockOwnerDeletion set.
//   - Bounded bursts: one sync creates or deletes at most BurstReplicas
//     (default 500) pods; creations go out in slow-start batches of 1, 2,
//     4, ... and stop at the first batch with a failure.
//   - Active pods only: pods being deleted or in phase Succeeded or Failed
//     are not counted, and surplus pods are deleted in the order of
//     [ActivePodsLess]: unscheduled, pending, unready, cheapest to delete,
//     doubled up on a node (counting the pods of every ReplicaSet of the
//     same Deployment), ready for the shortest time, most restarted,
//     newest first.
//   - Status: replicas, fullyLabeledReplicas, readyReplicas,
//     availableReplicas (ready for at least minReadySeconds on the injected
//     clock), observedGeneration and a ReplicaFailure condition while
//     creating or deleting fails, written through the status subresource
//     only when something changed. A ReplicaSet whose pods are ready but not
//     yet available is looked at again after minReadySeconds. With the
//     DeploymentReplicaSetTerminatingReplicas feature (on by default),
//     terminatingReplicas counts its pods being deleted and not finished.
//   - Events: SuccessfulCreate, SuccessfulDelete, FailedCreate and
//     FailedDelete on the ReplicaSet.
//
// The controller reads ReplicaSets and pods from a shared informers.Factory
// and does not start it: whoever owns the factory starts it, before or after
// Run. Run waits for the two caches, runs the workers until its context
// ends and returns once they have exited.
package replicaset
