// Package statefulset is the StatefulSet controller: it runs
// spec.replicas pods with stable identities and storage, and rolls them to
// new templates, with the semantics of the Kubernetes controller of the
// same name.
//
// Guarantees:
//   - Identity: the pod of ordinal i (from spec.ordinals.start) is named
//     <set>-<i>, has hostname <set>-<i> and subdomain spec.serviceName, and
//     the labels statefulset.kubernetes.io/pod-name, apps.kubernetes.io/pod-index
//     and controller-revision-hash (the name of its revision). Drifted
//     identity labels are restored.
//   - Storage: each volumeClaimTemplate gives the pod a PVC named
//     <claim>-<set>-<i>, created before the pod and never deleted by the
//     controller. persistentVolumeClaimRetentionPolicy decides the PVC's
//     owner references: whenDeleted=Delete makes the set an owner,
//     whenScaled=Delete makes the pod an owner once its ordinal is scaled
//     away, so that the garbage collector deletes them; Retain, neither.
//     The controller does not wait for PVCs to bind.
//   - OrderedReady (the default): pods are created one at a time in
//     ordinal order, each after its predecessors are Running and Ready
//     (and available for minReadySeconds); surplus pods are deleted one at
//     a time from the highest ordinal; a pod that is not healthy stops the
//     round. Parallel: all missing pods are created and all surplus pods
//     deleted at once, in slow-start batches of up to 500.
//   - Failed and Succeeded pods are deleted and recreated.
//   - Updates: every template is recorded in a ControllerRevision (see
//     package history) whose data is the strategic merge patch that
//     restores it, as Kubernetes stores it, so `kubectl rollout history`
//     and `kubectl rollout undo` work; a rollback renumbers the old
//     revision instead of creating one. RollingUpdate deletes pods not at
//     the update revision from the highest ordinal down to
//     rollingUpdate.partition, waiting for unavailable pods, up to
//     maxUnavailable at a time when MaxUnavailableStatefulSet is on (beta,
//     on by default), else one; OnDelete replaces only pods someone deleted.
//     Old revisions beyond revisionHistoryLimit (default 10) that no pod
//     uses are deleted, oldest first.
//   - Never on a stale cache: after issuing pod creations or deletions the
//     controller does not create or delete pods of that set again until
//     the pod informer has observed them (or 5 minutes pass). Status is
//     still written meanwhile.
//   - Ownership: pods and revisions are claimed through the controller-ref
//     manager: matching orphans are adopted, owned pods that stopped
//     matching are released, others' are never touched.
//   - Status: observedGeneration, replicas, readyReplicas,
//     availableReplicas, currentReplicas, updatedReplicas, currentRevision,
//     updateRevision and collisionCount, written through the status
//     subresource when they change; a finished rolling update makes the
//     update revision current, so `kubectl rollout status` ends. Conditions
//     are kept as they are (Kubernetes' controller sets none).
//   - Events: SuccessfulCreate ("create Pod web-0 in StatefulSet web
//     successful"), SuccessfulDelete, SuccessfulUpdate and their Failed
//     counterparts, and SuccessfulCreate/FailedCreate for claims.
//
// The controller reads StatefulSets, pods, PVCs and ControllerRevisions
// from a shared informers.Factory and does not start it. Run waits for the
// caches, runs the workers until its context ends and returns once they
// have exited.
package statefulset
