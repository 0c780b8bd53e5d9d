package deployment

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// rolloutRecreate takes one step of a Recreate rollout: scale every old
// set to zero, wait until none of their pods runs, then create or scale up
// the new set.
func (s *syncer) rolloutRecreate(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, podMap map[types.UID][]*corev1.Pod) error {
	newRS, oldRSs, err := s.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	allRSs := append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS)

	scaledDown := false
	for i, rs := range oldRSs {
		if rsReplicas(rs) == 0 {
			continue
		}
		scaled, updated, err := s.scaleReplicaSetAndRecordEvent(ctx, rs, 0, d)
		if err != nil {
			return err
		}
		if scaled {
			oldRSs[i] = updated
			scaledDown = true
		}
	}
	if scaledDown || oldPodsRunning(newRS, oldRSs, podMap) {
		return s.syncRolloutStatus(ctx, allRSs, newRS, d)
	}
	if newRS == nil {
		newRS, oldRSs, err = s.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, true)
		if err != nil {
			return err
		}
		allRSs = append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS)
	}
	if _, _, err := s.scaleReplicaSetAndRecordEvent(ctx, newRS, replicasOf(d), d); err != nil {
		return err
	}
	if deploymentComplete(d, &d.Status) {
		if err := s.cleanupDeployment(ctx, oldRSs, d); err != nil {
			return err
		}
	}
	return s.syncRolloutStatus(ctx, allRSs, newRS, d)
}

// oldPodsRunning reports whether an old set still reports replicas or any
// pod of an old set has not terminated.
func oldPodsRunning(newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet, podMap map[types.UID][]*corev1.Pod) bool {
	if actualReplicas(oldRSs) > 0 {
		return true
	}
	for uid, pods := range podMap {
		if newRS != nil && newRS.UID == uid {
			continue
		}
		for _, pod := range pods {
			if pod.Status.Phase != corev1.PodFailed && pod.Status.Phase != corev1.PodSucceeded {
				return true
			}
		}
	}
	return false
}
