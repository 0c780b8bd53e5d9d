package replicaset

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// PodDeletionCostAnnotation on a pod, an int32, makes it cheaper (lower) or
// dearer (higher) to delete than its siblings when scaling down.
const PodDeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"

// rankedPod is a pod with the number of related active pods on its node.
type rankedPod struct {
	pod  *corev1.Pod
	rank int
}

var phaseOrder = map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}

// ActivePodsLess reports whether pod a should be deleted before pod b when
// a ReplicaSet scales down. rankA and rankB are how many active pods
// related to each (of the ReplicaSets of the same Deployment) run on its
// node. The order, first difference wins:
//
//  1. not assigned to a node before assigned;
//  2. phase Pending before Unknown before Running;
//  3. not ready before ready;
//  4. lower pod-deletion-cost annotation before higher;
//  5. higher rank (doubled up on a node) before lower;
//  6. of two ready pods, ready more recently before ready longer;
//  7. more container restarts before fewer;
//  8. created more recently (or with no creation time) before older;
//  9. finally by uid, so the order is total and stable.
func ActivePodsLess(a, b *corev1.Pod, rankA, rankB int) bool {
	if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
		return a.Spec.NodeName == ""
	}
	if pa, pb := phaseOrder[a.Status.Phase], phaseOrder[b.Status.Phase]; pa != pb {
		return pa < pb
	}
	readyA, readyB := isPodReady(a), isPodReady(b)
	if readyA != readyB {
		return !readyA
	}
	if ca, cb := deletionCost(a), deletionCost(b); ca != cb {
		return ca < cb
	}
	if rankA != rankB {
		return rankA > rankB
	}
	if readyA && readyB {
		ta, tb := readySince(a), readySince(b)
		if !ta.Equal(tb) {
			return afterOrZero(ta, tb)
		}
	}
	if ra, rb := maxRestarts(a), maxRestarts(b); ra != rb {
		return ra > rb
	}
	if ta, tb := a.CreationTimestamp.Time, b.CreationTimestamp.Time; !ta.Equal(tb) {
		return afterOrZero(ta, tb)
	}
	return a.UID < b.UID
}

// afterOrZero orders a zero time first, then later times before earlier.
func afterOrZero(a, b time.Time) bool {
	if a.IsZero() || b.IsZero() {
		return a.IsZero()
	}
	return a.After(b)
}

func readySince(p *corev1.Pod) time.Time {
	if c := podCondition(p, corev1.PodReady); c != nil {
		return c.LastTransitionTime.Time
	}
	return time.Time{}
}

// deletionCost reads PodDeletionCostAnnotation; a missing or malformed
// value costs 0.
func deletionCost(p *corev1.Pod) int32 {
	v, ok := p.Annotations[PodDeletionCostAnnotation]
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0
	}
	return int32(n)
}

// maxRestarts is the highest restart count among the pod's containers.
func maxRestarts(p *corev1.Pod) int32 {
	var n int32
	for _, s := range p.Status.ContainerStatuses {
		n = max(n, s.RestartCount)
	}
	return n
}
