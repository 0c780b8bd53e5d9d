// Package deployment is the Deployment controller: it rolls a Deployment's
// pod template out through ReplicaSets, with the semantics of the
// Kubernetes controller of the same name.
//
// For each Deployment it claims the ReplicaSets of its namespace with a
// controller-ref manager (adopting matching orphans, releasing sets that
// stopped matching, never touching another controller's), finds the "new"
// set (the oldest whose template equals the Deployment's, ignoring the
// pod-template-hash label) and the old ones, and then:
//
//   - RollingUpdate: creates the new set as <name>-<hash> (hash from
//     ComputeHash over the template and status.collisionCount, added as the
//     pod-template-hash label to the set's selector, template and pods) and
//     scales it up within maxSurge while scaling old sets down within
//     maxUnavailable (percentages: surge rounds up, unavailable down; both 0
//     means unavailable 1). At no step does the sum of desired replicas
//     exceed replicas+maxSurge, nor are old replicas removed while fewer
//     than replicas-maxUnavailable would stay available.
//   - Recreate: scales every old set to 0, waits until no pod of theirs is
//     left running, then creates or scales up the new set.
//   - A change of replicas during a rollout (or while paused) resizes the
//     active sets in proportion to their sizes (the max-replicas
//     annotation records the base), the largest taking the rounding
//     leftover.
//   - Paused Deployments are not rolled out; scaling still applies.
//   - Revisions: every set carries deployment.kubernetes.io/revision; the
//     new set gets the highest old revision plus one. A rollback (the
//     template set back to an old set's) reuses that set and raises its
//     revision, recording the old number in revision-history. Sets also
//     carry desired-replicas and max-replicas annotations.
//   - Sets beyond revisionHistoryLimit that run nothing are deleted,
//     oldest revision first, once the rollout is complete (or while
//     paused).
//   - Status: observedGeneration, replicas, updatedReplicas, readyReplicas,
//     availableReplicas, unavailableReplicas, collisionCount, and the
//     Available and Progressing conditions with Kubernetes' reasons; a
//     rollout making no progress for progressDeadlineSeconds (on the
//     injected clock) is marked ProgressDeadlineExceeded. This is what
//     kubectl rollout status reads.
//   - Events: ScalingReplicaSet "Scaled up replica set x from a to b".
//
// The sync is level-triggered and idempotent: every pass recomputes from
// the caches, and a write that fails is retried with backoff.
//
// Time: conditions and the progress deadline read the injected clock; the
// wake-up scheduled for a rollout's deadline is a delayed add on the
// work queue, which runs on real time.
//
// One difference from Kubernetes: the Deployment's own revision
// annotation is written with a metadata patch rather than carried by the
// status write, because kplane's status subresource keeps metadata
// unchanged.
package deployment
