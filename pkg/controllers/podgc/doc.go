// Package podgc is the pod garbage collector: it deletes the pods nothing
// else will, with the semantics of the Kubernetes controller of the same
// name ("podgc").
//
// Every Period (default 20 s, on the injected clock) one pass:
//   - Terminated pods: when more than TerminatedPodThreshold (default
//     12500) pods are in phase Succeeded or Failed, the surplus is deleted,
//     evicted pods first, then the oldest by creation time.
//   - Terminating pods on out-of-service nodes: a pod being deleted on a
//     node that is not Ready and carries the node.kubernetes.io/out-of-service
//     taint is deleted at once, as its kubelet is known to be gone.
//   - Orphaned pods: a pod bound to a node that is not in the node cache is
//     deleted once the node has been missing for Quarantine (default 40 s)
//     and a read past the cache confirms it is gone, so that a node still
//     being created or a lagging cache never costs pods.
//   - Unscheduled terminating pods: a pod being deleted that was never
//     bound to a node is deleted at once.
//
// Before deleting a pod that has not finished, the collector sets its phase
// to Failed through the status subresource; an orphaned pod also gets the
// DisruptionTarget condition (reason DeletionByPodGC, message "PodGC: node
// no longer exists"), so that Jobs and users see why it went.
// Every deletion has gracePeriodSeconds 0: no kubelet will run the pod's
// shutdown. A pass that fails to delete a pod logs it and tries again on
// the next pass.
//
// The collector reads pods and nodes from a shared informers.Factory and
// does not start it. Run waits for the two caches, runs passes until its
// context ends, and returns once the pass in flight has finished.
package podgc
