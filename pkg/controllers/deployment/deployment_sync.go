package deployment

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/controller"
	"github.com/kplane/kplane/pkg/controller/record"
)

var deploymentKind = appsv1.SchemeGroupVersion.WithKind("Deployment")

// replicaSetWriter is the part of the API the sync writes ReplicaSets
// through.
type replicaSetWriter interface {
	Create(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error)
	Update(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error)
	Delete(ctx context.Context, namespace, name string, uid types.UID) error
	controller.Patcher
}

// deploymentWriter is the part of the API the sync writes Deployments
// through.
type deploymentWriter interface {
	Get(ctx context.Context, namespace, name string) (*appsv1.Deployment, error)
	UpdateStatus(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error)
	// Update writes the Deployment, its metadata included, if its
	// resourceVersion is still the stored one.
	Update(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error)
}

// eventRecorder is the part of record.Recorder the sync uses.
type eventRecorder interface {
	Eventf(obj record.Object, eventType, reason, format string, args ...any)
}

// syncer holds what the reconcile logic reads and writes.
type syncer struct {
	deployments  *cache.Lister[*appsv1.Deployment]
	replicaSets  *cache.Lister[*appsv1.ReplicaSet]
	pods         *cache.Lister[*corev1.Pod]
	rsWriter     replicaSetWriter
	dWriter      deploymentWriter
	recorder     eventRecorder
	clock        clock.PassiveClock
	enqueueAfter func(key string, d time.Duration)
}

// sync brings the Deployment named by key one step closer to its spec.
func (s *syncer) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitObjectKey(key)
	if err != nil {
		return controller.Terminal(err)
	}
	cached, err := s.deployments.Namespace(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	d := cached.DeepCopy()

	if d.Spec.Selector == nil || reflect.DeepEqual(*d.Spec.Selector, metav1.LabelSelector{}) {
		s.recorder.Eventf(d, corev1.EventTypeWarning, reasonSelectingAll, "This deployment is selecting all pods. A non-empty selector is required.")
		if d.Status.ObservedGeneration < d.Generation {
			d.Status.ObservedGeneration = d.Generation
			return s.updateStatus(ctx, d)
		}
		return nil
	}

	rsList, err := s.replicaSetsFor(ctx, d)
	if err != nil {
		return err
	}
	if d.DeletionTimestamp != nil {
		newRS, oldRSs, err := s.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, false)
		if err != nil {
			return err
		}
		return s.syncDeploymentStatus(ctx, append(oldRSs, newRS), newRS, d)
	}
	if err := s.checkPausedConditions(ctx, d); err != nil {
		return err
	}
	if d.Spec.Paused {
		return s.syncScale(ctx, d, rsList)
	}
	scaling, err := s.isScalingEvent(ctx, d, rsList)
	if err != nil {
		return err
	}
	if scaling {
		return s.syncScale(ctx, d, rsList)
	}
	switch d.Spec.Strategy.Type {
	case appsv1.RecreateDeploymentStrategyType:
		podMap, err := s.podMapFor(d, rsList)
		if err != nil {
			return err
		}
		return s.rolloutRecreate(ctx, d, rsList, podMap)
	case appsv1.RollingUpdateDeploymentStrategyType:
		return s.rolloutRolling(ctx, d, rsList)
	}
	return controller.Terminal(fmt.Errorf("unexpected deployment strategy type %q", d.Spec.Strategy.Type))
}

// replicaSetsFor claims the ReplicaSets of d's namespace: adopting
// matching orphans and releasing owned sets that stopped matching.
func (s *syncer) replicaSetsFor(ctx context.Context, d *appsv1.Deployment) ([]*appsv1.ReplicaSet, error) {
	all, err := s.replicaSets.Namespace(d.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, controller.Terminal(fmt.Errorf("deployment %s/%s has an invalid selector: %w", d.Namespace, d.Name, err))
	}
	return controller.ClaimReplicaSets(ctx, controller.RefManagerConfig[*appsv1.ReplicaSet]{
		Owner:     d,
		OwnerKind: deploymentKind,
		Selector:  selector,
		Patcher:   s.rsWriter,
		GetOwner: func(ctx context.Context) (metav1.Object, error) {
			return s.dWriter.Get(ctx, d.Namespace, d.Name)
		},
		Logger: controller.LoggerFrom(ctx),
	}, all)
}

// podMapFor groups the pods d selects by the uid of the set in rsList that
// controls them.
func (s *syncer) podMapFor(d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (map[types.UID][]*corev1.Pod, error) {
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, err
	}
	pods, err := s.pods.Namespace(d.Namespace).List(selector)
	if err != nil {
		return nil, err
	}
	m := make(map[types.UID][]*corev1.Pod, len(rsList))
	for _, rs := range rsList {
		m[rs.UID] = nil
	}
	for _, pod := range pods {
		ref := metav1.GetControllerOf(pod)
		if ref == nil {
			continue
		}
		if _, ok := m[ref.UID]; ok {
			m[ref.UID] = append(m[ref.UID], pod)
		}
	}
	return m, nil
}

// checkPausedConditions records pausing and resuming in the Progressing
// condition.
func (s *syncer) checkPausedConditions(ctx context.Context, d *appsv1.Deployment) error {
	if !hasProgressDeadline(d) {
		return nil
	}
	cond := getCondition(d.Status, appsv1.DeploymentProgressing)
	if cond != nil && cond.Reason == ReasonProgressDeadlineExceeded {
		return nil
	}
	paused := cond != nil && cond.Reason == ReasonDeploymentPaused
	switch {
	case d.Spec.Paused && !paused:
		setCondition(&d.Status, s.newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonDeploymentPaused, "Deployment is paused"))
	case !d.Spec.Paused && paused:
		setCondition(&d.Status, s.newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonDeploymentResumed, "Deployment is resumed"))
	default:
		return nil
	}
	return s.updateStatus(ctx, d)
}

// isScalingEvent reports whether d's replicas differ from those recorded
// on its active sets: a resize rather than a template change.
func (s *syncer) isScalingEvent(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (bool, error) {
	newRS, oldRSs, err := s.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return false, err
	}
	for _, rs := range activeSets(append(oldRSs, newRS)) {
		desired, ok := int32Annotation(rs, DesiredReplicasAnnotation)
		if ok && desired != replicasOf(d) {
			return true, nil
		}
	}
	return false, nil
}

// syncScale handles a paused Deployment or a resize: it scales the sets
// (proportionally during a rollout) without rolling anything out.
func (s *syncer) syncScale(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, oldRSs, err := s.getAllReplicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	if err := s.scale(ctx, d, newRS, oldRSs); err != nil {
		return err
	}
	if d.Spec.Paused {
		if err := s.cleanupDeployment(ctx, oldRSs, d); err != nil {
			return err
		}
	}
	return s.syncDeploymentStatus(ctx, append(oldRSs, newRS), newRS, d)
}

// scale resizes d's sets to d's replicas: the one active set directly;
// otherwise, during a rolling update, every active set by its share of the
// change, the largest set taking the rounding leftover.
func (s *syncer) scale(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) error {
	if rs := activeOrLatest(newRS, oldRSs); rs != nil {
		if rsReplicas(rs) == replicasOf(d) {
			return nil
		}
		_, _, err := s.scaleReplicaSetAndRecordEvent(ctx, rs, replicasOf(d), d)
		return err
	}
	if isSaturated(d, newRS) {
		for _, old := range activeSets(oldRSs) {
			if _, _, err := s.scaleReplicaSetAndRecordEvent(ctx, old, 0, d); err != nil {
				return err
			}
		}
		return nil
	}
	if !isRollingUpdate(d) {
		return nil
	}
	all := activeSets(append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS))
	allowed := int32(0)
	if replicasOf(d) > 0 {
		allowed = replicasOf(d) + MaxSurge(d)
	}
	toAdd := allowed - specReplicas(all)
	op := ""
	switch {
	case toAdd > 0:
		sort.Sort(bySizeNewer(all))
		op = "up"
	case toAdd < 0:
		sort.Sort(bySizeOlder(all))
		op = "down"
	}
	sizes := proportionalSizes(all, d, toAdd)
	for _, rs := range all {
		if _, _, err := s.scaleReplicaSet(ctx, rs, sizes[rs.Name], d, op); err != nil {
			return err
		}
	}
	return nil
}

// proportionalSizes spreads toAdd replicas over sets (sorted with the set
// that takes the leftover first) in proportion to their sizes.
func proportionalSizes(sets []*appsv1.ReplicaSet, d *appsv1.Deployment, toAdd int32) map[string]int32 {
	sizes := make(map[string]int32, len(sets))
	var added int32
	for _, rs := range sets {
		if toAdd == 0 {
			sizes[rs.Name] = rsReplicas(rs)
			continue
		}
		p := proportion(rs, d, toAdd, added)
		sizes[rs.Name] = rsReplicas(rs) + p
		added += p
	}
	if len(sets) > 0 && toAdd != 0 {
		first := sets[0].Name
		sizes[first] = max(sizes[first]+toAdd-added, 0)
	}
	return sizes
}

func (s *syncer) scaleReplicaSetAndRecordEvent(ctx context.Context, rs *appsv1.ReplicaSet, size int32, d *appsv1.Deployment) (bool, *appsv1.ReplicaSet, error) {
	if rsReplicas(rs) == size {
		return false, rs, nil
	}
	op := "down"
	if rsReplicas(rs) < size {
		op = "up"
	}
	return s.scaleReplicaSet(ctx, rs, size, d, op)
}

// scaleReplicaSet sets rs's replicas to size and its replicas annotations
// to d's, and records a ScalingReplicaSet event when the size changed.
func (s *syncer) scaleReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet, size int32, d *appsv1.Deployment, op string) (bool, *appsv1.ReplicaSet, error) {
	sizeChanged := rsReplicas(rs) != size
	maxReplicas := replicasOf(d) + MaxSurge(d)
	if !sizeChanged && !replicasAnnotationsNeedUpdate(rs, replicasOf(d), maxReplicas) {
		return false, rs, nil
	}
	old := rsReplicas(rs)
	cp := rs.DeepCopy()
	cp.Spec.Replicas = &size
	setReplicasAnnotations(cp, replicasOf(d), maxReplicas)
	updated, err := s.rsWriter.Update(ctx, cp)
	if err != nil {
		return false, rs, err
	}
	if sizeChanged {
		s.recorder.Eventf(d, corev1.EventTypeNormal, ReasonScalingReplicaSet, "Scaled %s replica set %s from %d to %d", op, rs.Name, old, size)
	}
	return sizeChanged, updated, nil
}

// findNewReplicaSet returns the oldest set whose template equals d's,
// ignoring the pod-template-hash label.
func findNewReplicaSet(d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	sorted := append([]*appsv1.ReplicaSet(nil), rsList...)
	sort.Sort(byCreation(sorted))
	for _, rs := range sorted {
		if equalIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			return rs
		}
	}
	return nil
}

// findOldReplicaSets returns every set but the new one.
func findOldReplicaSets(d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	newRS := findNewReplicaSet(d, rsList)
	var old []*appsv1.ReplicaSet
	for _, rs := range rsList {
		if newRS != nil && rs.UID == newRS.UID {
			continue
		}
		old = append(old, rs)
	}
	return old
}

// getAllReplicaSetsAndSyncRevision returns d's new set (creating it when
// asked and missing) and its old sets, bringing the revision annotations of
// the new set and of d up to date.
func (s *syncer) getAllReplicaSetsAndSyncRevision(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet, error) {
	oldRSs := findOldReplicaSets(d, rsList)
	newRS, err := s.getNewReplicaSet(ctx, d, rsList, oldRSs, create)
	if err != nil {
		return nil, nil, err
	}
	return newRS, oldRSs, nil
}

func (s *syncer) getNewReplicaSet(ctx context.Context, d *appsv1.Deployment, rsList, oldRSs []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, error) {
	existing := findNewReplicaSet(d, rsList)
	newRevision := strconv.FormatInt(maxRevision(oldRSs)+1, 10)

	if existing != nil {
		cp := existing.DeepCopy()
		annotationsChanged := setNewReplicaSetAnnotations(d, cp, newRevision, true)
		if annotationsChanged || cp.Spec.MinReadySeconds != d.Spec.MinReadySeconds {
			cp.Spec.MinReadySeconds = d.Spec.MinReadySeconds
			return s.rsWriter.Update(ctx, cp)
		}
		if err := s.setDeploymentRevision(ctx, d, cp.Annotations[RevisionAnnotation]); err != nil {
			return nil, err
		}
		if hasProgressDeadline(d) && getCondition(d.Status, appsv1.DeploymentProgressing) == nil {
			msg := fmt.Sprintf("Found new replica set %q", cp.Name)
			setCondition(&d.Status, s.newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonFoundNewReplicaSet, msg))
			if err := s.updateStatus(ctx, d); err != nil {
				return nil, err
			}
		}
		return cp, nil
	}
	if !create {
		return nil, nil
	}

	template := *d.Spec.Template.DeepCopy()
	hash := ComputeHash(&template, d.Status.CollisionCount)
	template.Labels = withLabel(d.Spec.Template.Labels, PodTemplateHashLabel, hash)
	selector := d.Spec.Selector.DeepCopy()
	if selector.MatchLabels == nil {
		selector.MatchLabels = map[string]string{}
	}
	selector.MatchLabels[PodTemplateHashLabel] = hash
	zero := int32(0)
	newRS := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            d.Name + "-" + hash,
			Namespace:       d.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, deploymentKind)},
			Labels:          template.Labels,
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        &zero,
			MinReadySeconds: d.Spec.MinReadySeconds,
			Selector:        selector,
			Template:        template,
		},
	}
	size := newRSNewReplicas(d, append(append([]*appsv1.ReplicaSet(nil), oldRSs...), newRS), newRS)
	newRS.Spec.Replicas = &size
	setNewReplicaSetAnnotations(d, newRS, newRevision, false)

	created, err := s.rsWriter.Create(ctx, newRS)
	alreadyExists := false
	switch {
	case apierrors.IsAlreadyExists(err):
		alreadyExists = true
		rs, getErr := s.replicaSets.Namespace(d.Namespace).Get(newRS.Name)
		if getErr != nil {
			return nil, getErr
		}
		if ref := metav1.GetControllerOf(rs); ref != nil && ref.UID == d.UID && equalIgnoreHash(&d.Spec.Template, &rs.Spec.Template) {
			// Ours, made by an earlier sync the cache had not shown yet.
			created, err = rs, nil
			break
		}
		// A different set has this name: a hash collision. Bump the count
		// so the next sync picks another name.
		if d.Status.CollisionCount == nil {
			d.Status.CollisionCount = new(int32)
		}
		*d.Status.CollisionCount++
		if uerr := s.updateStatus(ctx, d); uerr != nil {
			return nil, uerr
		}
		return nil, fmt.Errorf("replica set %s/%s exists with another template, collision count now %d: %w", d.Namespace, newRS.Name, *d.Status.CollisionCount, err)
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil, err
	case err != nil:
		msg := fmt.Sprintf("Failed to create new replica set %q: %v", newRS.Name, err)
		if hasProgressDeadline(d) {
			setCondition(&d.Status, s.newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonReplicaSetCreateError, msg))
			_ = s.updateStatus(ctx, d)
		}
		s.recorder.Eventf(d, corev1.EventTypeWarning, ReasonReplicaSetCreateError, "%s", msg)
		return nil, err
	}
	if !alreadyExists && size > 0 {
		s.recorder.Eventf(d, corev1.EventTypeNormal, ReasonScalingReplicaSet, "Scaled up replica set %s from 0 to %d", created.Name, size)
	}
	if err := s.setDeploymentRevision(ctx, d, newRevision); err != nil {
		return nil, err
	}
	if !alreadyExists && hasProgressDeadline(d) {
		msg := fmt.Sprintf("Created new replica set %q", created.Name)
		setCondition(&d.Status, s.newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewReplicaSetCreated, msg))
		if err := s.updateStatus(ctx, d); err != nil {
			return nil, err
		}
	}
	return created, nil
}

func withLabel(in map[string]string, key, value string) map[string]string {
	out := make(map[string]string, len(in)+1)
	for k, v := range in {
		out[k] = v
	}
	out[key] = value
	return out
}

// annotationsNotCopied are the Deployment annotations a ReplicaSet does
// not inherit.
var annotationsNotCopied = map[string]bool{
	lastAppliedAnnotation:     true,
	RevisionAnnotation:        true,
	RevisionHistoryAnnotation: true,
	DesiredReplicasAnnotation: true,
	MaxReplicasAnnotation:     true,
	rollbackToAnnotation:      true,
}

// setNewReplicaSetAnnotations copies d's annotations to rs, raises rs's
// revision to newRevision when it is lower (remembering the old one in the
// revision history: a rollback), and on a set not yet created records the
// replicas annotations. It reports whether rs changed.
func setNewReplicaSetAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet, newRevision string, exists bool) bool {
	changed := false
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	for k, v := range d.Annotations {
		if annotationsNotCopied[k] {
			continue
		}
		if cur, ok := rs.Annotations[k]; !ok || cur != v {
			rs.Annotations[k] = v
			changed = true
		}
	}
	oldRevision, had := rs.Annotations[RevisionAnnotation]
	oldRev, err := strconv.ParseInt(oldRevision, 10, 64)
	if err != nil {
		if oldRevision != "" {
			return false
		}
		oldRev = 0
	}
	newRev, err := strconv.ParseInt(newRevision, 10, 64)
	if err != nil {
		return false
	}
	if oldRev < newRev {
		rs.Annotations[RevisionAnnotation] = newRevision
		changed = true
		if had {
			addRevisionHistory(rs, oldRevision)
		}
	}
	if !exists && setReplicasAnnotations(rs, replicasOf(d), replicasOf(d)+MaxSurge(d)) {
		changed = true
	}
	return changed
}

// addRevisionHistory appends rev to rs's revision history, dropping the
// oldest entries to stay within revisionHistoryMaxChars.
func addRevisionHistory(rs *appsv1.ReplicaSet, rev string) {
	history := rs.Annotations[RevisionHistoryAnnotation]
	if history == "" {
		rs.Annotations[RevisionHistoryAnnotation] = rev
		return
	}
	revs := strings.Split(history, ",")
	total := len(history) + len(rev) + 1
	start := 0
	for total > revisionHistoryMaxChars && start < len(revs) {
		total -= len(revs[start]) + 1
		start++
	}
	if total <= revisionHistoryMaxChars {
		rs.Annotations[RevisionHistoryAnnotation] = strings.Join(append(revs[start:], rev), ",")
	}
}

// setDeploymentRevision writes revision into d's revision annotation when
// it differs. The annotation is metadata, so the object itself is updated
// (a status write does not carry metadata), as kube-controller-manager does
// and as its RBAC role allows (update, not patch); a Deployment changed
// since d was read is a conflict, and the sync is retried. d takes the
// result's metadata, keeping its own status.
func (s *syncer) setDeploymentRevision(ctx context.Context, d *appsv1.Deployment, revision string) error {
	if d.Annotations[RevisionAnnotation] == revision {
		return nil
	}
	next := d.DeepCopy()
	if next.Annotations == nil {
		next.Annotations = map[string]string{}
	}
	next.Annotations[RevisionAnnotation] = revision
	updated, err := s.dWriter.Update(ctx, next)
	if err != nil {
		return err
	}
	if updated.UID != d.UID || updated.Generation != d.Generation {
		// The spec changed under this sync: what it decided is stale, and
		// its status must not claim the new generation. Start over.
		return fmt.Errorf("deployment %s/%s changed during sync (generation %d, now %d)", d.Namespace, d.Name, d.Generation, updated.Generation)
	}
	status := d.Status
	updated.ObjectMeta.DeepCopyInto(&d.ObjectMeta)
	d.Status = status
	return nil
}

// updateStatus writes d's status and keeps the stored version in d so a
// later write in the same sync does not conflict.
func (s *syncer) updateStatus(ctx context.Context, d *appsv1.Deployment) error {
	updated, err := s.dWriter.UpdateStatus(ctx, d)
	if err != nil {
		return err
	}
	d.ResourceVersion = updated.ResourceVersion
	return nil
}

// cleanupDeployment deletes the oldest old sets beyond the revision
// history limit that run nothing and whose status is current.
func (s *syncer) cleanupDeployment(ctx context.Context, oldRSs []*appsv1.ReplicaSet, d *appsv1.Deployment) error {
	if d.Spec.RevisionHistoryLimit == nil {
		return nil
	}
	var cleanable []*appsv1.ReplicaSet
	for _, rs := range oldRSs {
		if rs != nil && rs.DeletionTimestamp == nil {
			cleanable = append(cleanable, rs)
		}
	}
	diff := len(cleanable) - int(*d.Spec.RevisionHistoryLimit)
	if diff <= 0 {
		return nil
	}
	sort.Sort(byRevision(cleanable))
	for _, rs := range cleanable[:diff] {
		if rs.Status.Replicas != 0 || rsReplicas(rs) != 0 || rs.Generation > rs.Status.ObservedGeneration {
			continue
		}
		if err := s.rsWriter.Delete(ctx, rs.Namespace, rs.Name, rs.UID); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return err
		}
	}
	return nil
}
