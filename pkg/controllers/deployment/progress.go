package deployment

import (
	"context"
	"fmt"
	"math"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Annotations and labels the controller writes, as Kubernetes names them.
const (
	// RevisionAnnotation on a ReplicaSet is the rollout revision its
	// template belongs to; on the Deployment, the revision of its new set.
	RevisionAnnotation = "deployment.kubernetes.io/revision"
	// RevisionHistoryAnnotation lists earlier revisions of a set whose
	// template was rolled back to.
	RevisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	// DesiredReplicasAnnotation is the Deployment's replicas when the set
	// was last scaled.
	DesiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	// MaxReplicasAnnotation is replicas+maxSurge when the set was last
	// scaled; proportional scaling reads it.
	MaxReplicasAnnotation = "deployment.kubernetes.io/max-replicas"
	// PodTemplateHashLabel tells the sets of one Deployment apart.
	PodTemplateHashLabel = appsv1.DefaultDeploymentUniqueLabelKey

	lastAppliedAnnotation = corev1.LastAppliedConfigAnnotation
	rollbackToAnnotation  = "deprecated.deployment.rollback.to"
	// revisionHistoryMaxChars bounds the revision-history annotation.
	revisionHistoryMaxChars = 2000
)

// Condition reasons, as Kubernetes reports them.
const (
	ReasonNewReplicaSetCreated       = "NewReplicaSetCreated"
	ReasonFoundNewReplicaSet         = "FoundNewReplicaSet"
	ReasonReplicaSetUpdated          = "ReplicaSetUpdated"
	ReasonNewReplicaSetAvailable     = "NewReplicaSetAvailable"
	ReasonProgressDeadlineExceeded   = "ProgressDeadlineExceeded"
	ReasonDeploymentPaused           = "DeploymentPaused"
	ReasonDeploymentResumed          = "DeploymentResumed"
	ReasonReplicaSetCreateError      = "ReplicaSetCreateError"
	ReasonMinimumReplicasAvailable   = "MinimumReplicasAvailable"
	ReasonMinimumReplicasUnavailable = "MinimumReplicasUnavailable"
	// ReasonScalingReplicaSet is the event reason of every scale.
	ReasonScalingReplicaSet = "ScalingReplicaSet"
	reasonSelectingAll      = "SelectingAll"
)

func (s *syncer) newCondition(t appsv1.DeploymentConditionType, status corev1.ConditionStatus, reason, msg string) appsv1.DeploymentCondition {
	// Whole seconds: what the API server stores, so a status read back
	// compares equal to the one written.
	now := metav1.NewTime(s.clock.Now()).Rfc3339Copy()
	return appsv1.DeploymentCondition{Type: t, Status: status, Reason: reason, Message: msg, LastUpdateTime: now, LastTransitionTime: now}
}

func getCondition(status appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range status.Conditions {
		if status.Conditions[i].Type == t {
			return &status.Conditions[i]
		}
	}
	return nil
}

// setCondition replaces the condition of c's type unless it has the same
// status and reason; the transition time is kept while the status holds.
func setCondition(status *appsv1.DeploymentStatus, c appsv1.DeploymentCondition) {
	cur := getCondition(*status, c.Type)
	if cur != nil && cur.Status == c.Status && cur.Reason == c.Reason {
		return
	}
	if cur != nil && cur.Status == c.Status {
		c.LastTransitionTime = cur.LastTransitionTime
	}
	removeCondition(status, c.Type)
	status.Conditions = append(status.Conditions, c)
}

func removeCondition(status *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) {
	var out []appsv1.DeploymentCondition
	for _, c := range status.Conditions {
		if c.Type != t {
			out = append(out, c)
		}
	}
	status.Conditions = out
}

func hasProgressDeadline(d *appsv1.Deployment) bool {
	return d.Spec.ProgressDeadlineSeconds != nil && *d.Spec.ProgressDeadlineSeconds != math.MaxInt32
}

// deploymentComplete: every desired replica is updated and available, and
// the status describes the current generation.
func deploymentComplete(d *appsv1.Deployment, st *appsv1.DeploymentStatus) bool {
	n := replicasOf(d)
	return st.UpdatedReplicas == n && st.Replicas == n && st.AvailableReplicas == n && st.ObservedGeneration >= d.Generation
}

// deploymentProgressing: st moved forward from d's stored status.
func deploymentProgressing(d *appsv1.Deployment, st *appsv1.DeploymentStatus) bool {
	old := d.Status
	return st.UpdatedReplicas > old.UpdatedReplicas ||
		st.Replicas-st.UpdatedReplicas < old.Replicas-old.UpdatedReplicas ||
		st.ReadyReplicas > old.ReadyReplicas ||
		st.AvailableReplicas > old.AvailableReplicas
}

func (s *syncer) deploymentTimedOut(d *appsv1.Deployment) bool {
	if !hasProgressDeadline(d) {
		return false
	}
	c := getCondition(d.Status, appsv1.DeploymentProgressing)
	if c == nil || c.Reason == ReasonNewReplicaSetAvailable {
		return false
	}
	if c.Reason == ReasonProgressDeadlineExceeded {
		return true
	}
	deadline := c.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second)
	return deadline.Before(s.clock.Now())
}

// calculateStatus derives d's status from its sets.
func (s *syncer) calculateStatus(allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) appsv1.DeploymentStatus {
	available := availableReplicas(allRSs)
	unavailable := max(specReplicas(allRSs)-available, 0)
	st := appsv1.DeploymentStatus{
		ObservedGeneration:  d.Generation,
		Replicas:            actualReplicas(allRSs),
		UpdatedReplicas:     actualReplicas([]*appsv1.ReplicaSet{newRS}),
		ReadyReplicas:       readyReplicas(allRSs),
		AvailableReplicas:   available,
		UnavailableReplicas: unavailable,
		CollisionCount:      d.Status.CollisionCount,
		Conditions:          append([]appsv1.DeploymentCondition(nil), d.Status.Conditions...),
	}
	if available >= replicasOf(d)-MaxUnavailable(d) {
		setCondition(&st, s.newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, ReasonMinimumReplicasAvailable, "Deployment has minimum availability."))
	} else {
		setCondition(&st, s.newCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, ReasonMinimumReplicasUnavailable, "Deployment does not have minimum availability."))
	}
	return st
}

// syncDeploymentStatus writes the status the sets imply, if it changed.
func (s *syncer) syncDeploymentStatus(ctx context.Context, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) error {
	st := s.calculateStatus(allRSs, newRS, d)
	if apiequality.Semantic.DeepEqual(d.Status, st) {
		return nil
	}
	d.Status = st
	return s.updateStatus(ctx, d)
}

// syncRolloutStatus writes the status of a rollout: the counts and the
// Progressing condition (complete, progressing or past its deadline). A
// rollout that is neither complete nor timed out is looked at again when
// its deadline passes.
func (s *syncer) syncRolloutStatus(ctx context.Context, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) error {
	st := s.calculateStatus(allRSs, newRS, d)
	if !hasProgressDeadline(d) {
		removeCondition(&st, appsv1.DeploymentProgressing)
	}
	cur := getCondition(d.Status, appsv1.DeploymentProgressing)
	complete := st.Replicas == st.UpdatedReplicas && cur != nil && cur.Reason == ReasonNewReplicaSetAvailable
	if hasProgressDeadline(d) && !complete {
		switch {
		case deploymentComplete(d, &st):
			msg := fmt.Sprintf("Deployment %q has successfully progressed.", d.Name)
			if newRS != nil {
				msg = fmt.Sprintf("ReplicaSet %q has successfully progressed.", newRS.Name)
			}
			setCondition(&st, s.newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewReplicaSetAvailable, msg))
		case deploymentProgressing(d, &st):
			msg := fmt.Sprintf("Deployment %q is progressing.", d.Name)
			if newRS != nil {
				msg = fmt.Sprintf("ReplicaSet %q is progressing.", newRS.Name)
			}
			c := s.newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonReplicaSetUpdated, msg)
			// Progress refreshes lastUpdateTime, which the deadline counts
			// from, even when the reason stays the same.
			if cur != nil {
				if cur.Status == corev1.ConditionTrue {
					c.LastTransitionTime = cur.LastTransitionTime
				}
				removeCondition(&st, appsv1.DeploymentProgressing)
			}
			setCondition(&st, c)
		case s.deploymentTimedOut(d):
			msg := fmt.Sprintf("Deployment %q has timed out progressing.", d.Name)
			if newRS != nil {
				msg = fmt.Sprintf("ReplicaSet %q has timed out progressing.", newRS.Name)
			}
			setCondition(&st, s.newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonProgressDeadlineExceeded, msg))
		}
	}
	if c := replicaFailure(allRSs, newRS); c != nil {
		setCondition(&st, *c)
	} else {
		removeCondition(&st, appsv1.DeploymentReplicaFailure)
	}
	if apiequality.Semantic.DeepEqual(d.Status, st) {
		s.requeueStuck(d, st)
		return nil
	}
	d.Status = st
	return s.updateStatus(ctx, d)
}

// replicaFailure lifts a ReplicaFailure condition of the new set (else of
// an old one) to the Deployment.
func replicaFailure(allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) *appsv1.DeploymentCondition {
	find := func(rs *appsv1.ReplicaSet) *appsv1.DeploymentCondition {
		if rs == nil {
			return nil
		}
		for _, c := range rs.Status.Conditions {
			if c.Type == appsv1.ReplicaSetReplicaFailure {
				return &appsv1.DeploymentCondition{
					Type: appsv1.DeploymentReplicaFailure, Status: c.Status, Reason: c.Reason, Message: c.Message,
					LastUpdateTime: c.LastTransitionTime, LastTransitionTime: c.LastTransitionTime,
				}
			}
		}
		return nil
	}
	if c := find(newRS); c != nil {
		return c
	}
	for _, rs := range allRSs {
		if c := find(rs); c != nil {
			return c
		}
	}
	return nil
}

// requeueStuck schedules another look at a rollout in progress for when
// its progress deadline passes, so that the timeout is reported even if
// nothing else changes.
func (s *syncer) requeueStuck(d *appsv1.Deployment, st appsv1.DeploymentStatus) {
	cur := getCondition(d.Status, appsv1.DeploymentProgressing)
	if !hasProgressDeadline(d) || cur == nil || deploymentComplete(d, &st) || cur.Reason == ReasonProgressDeadlineExceeded {
		return
	}
	if s.enqueueAfter == nil {
		return
	}
	after := cur.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second).Sub(s.clock.Now())
	if after < time.Second {
		after = 0
	}
	s.enqueueAfter(d.Namespace+"/"+d.Name, after+time.Second)
}
