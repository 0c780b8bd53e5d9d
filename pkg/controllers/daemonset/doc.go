// Package daemonset is the DaemonSet controller: it keeps one pod of each
// DaemonSet on every node that should run it, rolls those pods to a new
// template, and keeps the DaemonSet's history and status, as
// kube-controller-manager's does.
//
// Guarantees:
//   - Eligibility: a node should run a DaemonSet's pod when it matches the
//     template's nodeName (if set), nodeSelector and required node
//     affinity, and every NoSchedule and NoExecute taint it has is
//     tolerated by the template's tolerations plus the default daemon
//     tolerations (not-ready and unreachable NoExecute; disk-, memory-,
//     pid-pressure and unschedulable NoSchedule; network-unavailable
//     NoSchedule for host-network pods). A pod on a node with only
//     untolerated NoSchedule taints stays; any other pod on a node that no
//     longer matches is deleted (it counts as misscheduled until then).
//   - Placement: a pod is created for a node with its required node
//     affinity replaced by metadata.name In [node] (matchFields) and no
//     spec.nodeName, and the scheduler binds it there. A pod not yet bound
//     whose node is gone is deleted; a bound one is left to the pod garbage
//     collector and no longer counted.
//   - Failed daemon pods are deleted (event FailedDaemonPod) and replaced,
//     with a back-off per DaemonSet and node from 1s doubling to 15m;
//     succeeded ones are replaced at once. Surplus pods on a node are
//     deleted, the oldest kept.
//   - Updates: RollingUpdate replaces out-of-date pods within
//     maxUnavailable (default 1) of unavailable ones, or, with maxSurge,
//     creates the new pod first and deletes the old one once the new one
//     has been ready for minReadySeconds; OnDelete replaces a pod only when
//     it is deleted. A pod is up to date when its controller-revision-hash
//     label is the current revision's, or its pod-template-generation
//     label the DaemonSet's template generation.
//   - History: a ControllerRevision per distinct template, named
//     <daemonset>-<hash>, holding the patch that restores it (what
//     `kubectl rollout undo` applies) and numbered; a template that comes
//     back renumbers its revision past the others; revisions beyond
//     revisionHistoryLimit (default 10) that no pod runs are deleted; a
//     hash collision raises status.collisionCount.
//   - Status: desiredNumberScheduled, currentNumberScheduled, numberReady,
//     numberAvailable, numberUnavailable, updatedNumberScheduled,
//     numberMisscheduled over the nodes that exist, and observedGeneration
//     once a sync with met expectations acted on that generation; the
//     conditions `kubectl rollout status` waits for.
//   - Expectations hold a DaemonSet back until its creations and deletions
//     are observed; orphans that match are adopted and owned pods that stop
//     matching released. At most DefaultBurstReplicas pods are created and
//     deleted per sync. A DaemonSet with an empty selector does nothing
//     (event SelectingAll).
//
// The controller reads DaemonSets, pods, nodes and ControllerRevisions
// from a shared informers.Factory and does not start it. All times come
// from the injected clock.
package daemonset
