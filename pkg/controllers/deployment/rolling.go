package deployment

import (
	"context"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
)

// rolloutRolling takes one step of a rolling update: scale the new set up
// within the surge budget, or else scale old sets down within the
// unavailability budget; once complete, prune old sets.
func (s *syncer) rolloutRolling(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := s.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, true)
	if err != nil {
		return err
	}
	allRSs := append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS)

	scaledUp, err := s.reconcileNewReplicaSet(ctx, allRSs, newRS, d)
	if err != nil {
		return err
	}
	if scaledUp {
		return s.syncRolloutStatus(ctx, allRSs, newRS, d)
	}
	scaledDown, err := s.reconcileOldReplicaSets(ctx, allRSs, activeSets(oldRSs), newRS, d)
	if err != nil {
		return err
	}
	if scaledDown {
		return s.syncRolloutStatus(ctx, allRSs, newRS, d)
	}
	if deploymentComplete(d, &d.Status) {
		if err := s.cleanupDeployment(ctx, oldRSs, d); err != nil {
			return err
		}
	}
	return s.syncRolloutStatus(ctx, allRSs, newRS, d)
}

func (s *syncer) reconcileNewReplicaSet(ctx context.Context, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	desired := replicasOf(d)
	switch {
	case rsReplicas(newRS) == desired:
		return false, nil
	case rsReplicas(newRS) > desired:
		scaled, _, err := s.scaleReplicaSetAndRecordEvent(ctx, newRS, desired, d)
		return scaled, err
	}
	scaled, _, err := s.scaleReplicaSetAndRecordEvent(ctx, newRS, newRSNewReplicas(d, allRSs, newRS), d)
	return scaled, err
}

// oldScaleDownBudget is how many old replicas may go now: everything
// above the minimum available, less the new set's replicas that are not
// available yet (they cannot be counted on).
func oldScaleDownBudget(d *appsv1.Deployment, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) int32 {
	minAvailable := replicasOf(d) - MaxUnavailable(d)
	newUnavailable := rsReplicas(newRS) - newRS.Status.AvailableReplicas
	return specReplicas(allRSs) - minAvailable - newUnavailable
}

func (s *syncer) reconcileOldReplicaSets(ctx context.Context, allRSs, oldRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	if specReplicas(oldRSs) == 0 {
		return false, nil
	}
	budget := oldScaleDownBudget(d, allRSs, newRS)
	if budget <= 0 {
		return false, nil
	}
	oldRSs, cleaned, err := s.cleanupUnhealthyReplicas(ctx, oldRSs, d, budget)
	if err != nil {
		return false, err
	}
	allRSs = append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS)
	scaledDown, err := s.scaleDownOldReplicaSetsForRollingUpdate(ctx, allRSs, oldRSs, d)
	if err != nil {
		return false, err
	}
	return cleaned+scaledDown > 0, nil
}

// cleanupUnhealthyReplicas first removes old replicas that are not
// available, oldest sets first, up to budget: they cost no availability.
func (s *syncer) cleanupUnhealthyReplicas(ctx context.Context, oldRSs []*appsv1.ReplicaSet, d *appsv1.Deployment, budget int32) ([]*appsv1.ReplicaSet, int32, error) {
	sort.Sort(byCreation(oldRSs))
	var total int32
	for i, rs := range oldRSs {
		if total >= budget {
			break
		}
		if rsReplicas(rs) == 0 || rsReplicas(rs) == rs.Status.AvailableReplicas {
			continue
		}
		n := min(budget-total, rsReplicas(rs)-rs.Status.AvailableReplicas)
		size := rsReplicas(rs) - n
		if size > rsReplicas(rs) {
			return nil, 0, fmt.Errorf("invalid scale down of %s/%s from %d to %d", rs.Namespace, rs.Name, rsReplicas(rs), size)
		}
		_, updated, err := s.scaleReplicaSetAndRecordEvent(ctx, rs, size, d)
		if err != nil {
			return nil, total, err
		}
		total += n
		oldRSs[i] = updated
	}
	return oldRSs, total, nil
}

// scaleDownOldReplicaSetsForRollingUpdate scales old sets down, oldest
// first, by the available replicas above the minimum available.
func (s *syncer) scaleDownOldReplicaSetsForRollingUpdate(ctx context.Context, allRSs, oldRSs []*appsv1.ReplicaSet, d *appsv1.Deployment) (int32, error) {
	minAvailable := replicasOf(d) - MaxUnavailable(d)
	available := availableReplicas(allRSs)
	if available <= minAvailable {
		return 0, nil
	}
	budget := available - minAvailable
	sort.Sort(byCreation(oldRSs))
	var total int32
	for _, rs := range oldRSs {
		if total >= budget {
			break
		}
		if rsReplicas(rs) == 0 {
			continue
		}
		n := min(rsReplicas(rs), budget-total)
		if _, _, err := s.scaleReplicaSetAndRecordEvent(ctx, rs, rsReplicas(rs)-n, d); err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}
