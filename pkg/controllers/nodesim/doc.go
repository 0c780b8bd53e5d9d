// Package nodesim simulates the node agents of a cluster, so that pods
// created against a kplane API server are scheduled, start and stop as on
// a real cluster, without containers.
//
// A Simulator registers Config.Nodes Node objects (named NamePrefix0,
// NamePrefix1, ...) with a Ready condition, capacity and allocatable
// resources, addresses and node info, and renews one Lease per node in
// the kube-node-lease namespace every HeartbeatInterval, as kubelets do.
//
// Nodes can come and go while it runs: AddNode simulates one more node
// (the next index) and registers it; RemoveNode stops simulating one and
// deletes its Node object and Lease, leaving the pods bound to it
// unfinished for the pod garbage collector, as on a cluster that lost a
// machine. A simulated node whose Node object is deleted by someone else
// (kubectl delete node) registers again on its next heartbeat, as a
// running kubelet does, and keeps running its pods; labels, taints and
// spec.unschedulable set on Node objects (kubectl label, taint, cordon)
// steer the scheduling below at once.
//
// It acts on pods as a scheduler and kubelets would:
//   - Scheduling: a pending pod without spec.nodeName and with the default
//     scheduler is bound, through the pods/binding subresource, to the
//     simulated node with the fewest pods among those it fits, by
//     kube-scheduler's filters in their order: the node is not
//     unschedulable (unless the pod tolerates the
//     node.kubernetes.io/unschedulable taint, as DaemonSet pods do) and is
//     Ready (unless the pod tolerates node.kubernetes.io/not-ready); its
//     NoSchedule and NoExecute taints are tolerated; it matches the pod's
//     nodeSelector and required node affinity (terms ORed; In, NotIn,
//     Exists, DoesNotExist, Gt, Lt on labels; matchFields on
//     metadata.name, which is how DaemonSet pods name their node); it has
//     room under its pod capacity and its allocatable resources for the
//     pod's requests (the larger of the containers' sum and each init
//     container's, sidecar init containers added in, plus overhead),
//     counting every unfinished pod bound or being bound there.
//     When none fits, the pod gets a PodScheduled=False condition with
//     reason Unschedulable and the message kube-scheduler writes, e.g.
//     "0/3 nodes are available: 1 node(s) didn't match Pod's node
//     affinity/selector, 2 node(s) had untolerated taint(s). no new claims
//     to deallocate, preemption: 0/3 nodes are available: 3 Preemption is
//     not helpful for scheduling." (nodes failing on resources count as
//     "No preemption victims found for incoming pod": the simulator
//     preempts nothing), and is tried again when a simulated node changes
//     or a pod leaves one.
//   - With Config.NoScheduling the simulator schedules nothing and leaves
//     unbound pods to another scheduler, such as kube-scheduler; it runs
//     the pods bound to its nodes as below.
//   - A pod created with spec.nodeName set to a simulated node skips
//     scheduling and is started there, without a check of its resources.
//   - Starting: a pod bound to a simulated node first shows phase Pending
//     with its containers ContainerCreating (unless StartupDelay is
//     negative), and StartupDelay after it was first seen bound phase
//     Running with the PodScheduled, Initialized, ContainersReady and
//     Ready conditions True, a host IP, a pod IP, a start time and
//     running, ready container statuses. Status is written through the
//     status subresource.
//   - Addresses: each node gets its own /24 pod CIDR in spec.podCIDR and
//     spec.podCIDRs, as node IPAM would set (node i the i-th /24 from
//     10.244.0.0/24, wrapping within 10.0.0.0/8), and its own host IP in
//     172.18.0.0/16; both stay distinct for up to 65,534 nodes. A pod gets
//     a free address of its node's CIDR, past the network and gateway
//     addresses, and keeps it; an address is free while no unfinished pod
//     on the node holds it, so pod IPs never repeat across nodes. A pod
//     that already has an IP keeps it, and a Simulator, restarted or not,
//     never hands out an address that a pod its pod cache shows on the
//     node holds. A pod that finishes or is deleted frees its address,
//     which is handed out again only after the rest of the range. A node
//     whose every address is held starts no further pod until one frees;
//     the sync is retried.
//   - Bound pods are written and deleted only for the simulated nodes;
//     pods bound to any other node are never touched.
//   - Stopping: a pod with a deletionTimestamp is deleted with
//     gracePeriodSeconds=0 and its uid as a precondition once its
//     containers have stopped: after the smaller of its grace period and
//     TerminationDelay.
//   - Stopping marks a pod with finalizers (such as a Job's pods, which
//     outlive their deletion) Failed first, its containers terminated with
//     exit code 137, as a kubelet gives a deleted pod a terminal phase.
//   - Completion: a running pod with restartPolicy Never or OnFailure and
//     the CompleteAfterAnnotation (a duration), ExitCodeAnnotation or
//     FailTimesAnnotation has its containers exit that long (or, without
//     CompleteAfterAnnotation, at once) after they started running, with
//     the exit code ExitCodeAnnotation gives (default 0; for the first
//     FailTimesAnnotation runs that code, or 1, and 0 afterwards). Exit
//     code 0 makes the pod Succeeded. Any other code makes a Never pod
//     Failed, its containers terminated with reason Error, with the
//     condition FailConditionAnnotation names set True when it names one;
//     an OnFailure pod stays Running, unready, its containers waiting in
//     CrashLoopBackOff with the run's end as their lastState and
//     restartCount raised, and its containers run again StartupDelay
//     later. Pods without these annotations run until deleted.
//
// All delays run on the injected clock, so tests drive them with a fake
// clock. The Simulator reads pods and nodes from a shared
// informers.Factory and does not start it; Run schedules nothing before
// the nodes it registered are in that cache, so the first pods spread
// over all of them.
package nodesim
