package statefulset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/controller"
	"github.com/kplane/kplane/pkg/controller/history"
)

// maxBatchSize caps the pods a Parallel set creates or deletes at once.
const maxBatchSize = 500

// statusUpdateRetries is how many times a conflicting status write is
// retried on a fresh read within one sync.
const statusUpdateRetries = 1

// setWriter reads StatefulSets past the cache and writes their status.
type setWriter interface {
	GetStatefulSet(ctx context.Context, namespace, name string) (*appsv1.StatefulSet, error)
	UpdateStatus(ctx context.Context, set *appsv1.StatefulSet) (*appsv1.StatefulSet, error)
}

// syncer holds what the reconcile logic reads and writes. It is safe for
// concurrent use by the workers (never on the same key at once).
type syncer struct {
	setLister *cache.Lister[*appsv1.StatefulSet]
	// podIndexer is the pod cache; it has controller.ControllerUIDIndex.
	podIndexer *cache.Indexer[*corev1.Pod]
	pvcLister  *cache.Lister[*corev1.PersistentVolumeClaim]
	history    *history.History
	api        objectWriter
	sets       setWriter
	recorder   EventRecorder
	// expectations holds a set back from creating or deleting pods until
	// the pod informer has seen the creations and deletions it issued.
	expectations *controller.Expectations
	clock        clock.PassiveClock
	// enqueueAfter looks at a key again once a duration has passed.
	enqueueAfter func(key string, d time.Duration)
	// maxUnavailable follows spec.updateStrategy.rollingUpdate.maxUnavailable
	// (MaxUnavailableStatefulSet); off, rolling updates take one pod at a
	// time.
	maxUnavailable bool
}

// sync brings the StatefulSet named by key one step closer to its spec and
// writes its status.
func (s *syncer) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitObjectKey(key)
	if err != nil {
		return controller.Terminal(err)
	}
	set, err := s.setLister.Namespace(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		s.expectations.DeleteExpectations(key)
		return nil
	}
	if err != nil {
		return err
	}
	selector, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil {
		// Validation should have refused it; retrying cannot help.
		return controller.Terminal(fmt.Errorf("invalid selector: %w", err))
	}
	if err := s.adoptOrphanRevisions(ctx, set, selector); err != nil {
		return err
	}
	pods, err := s.claimPods(ctx, set, selector)
	if err != nil {
		return err
	}
	status, err := s.updateStatefulSet(ctx, key, set, selector, pods)
	if err != nil {
		return err
	}
	if set.Spec.MinReadySeconds > 0 && status != nil && int(status.AvailableReplicas) != replicasOf(set) {
		s.enqueueAfter(key, time.Duration(set.Spec.MinReadySeconds)*time.Second)
	}
	return nil
}

// freshSet reads set past the cache and checks it may still adopt: the
// same uid, not being deleted.
func (s *syncer) freshSet(ctx context.Context, set *appsv1.StatefulSet) (*appsv1.StatefulSet, error) {
	fresh, err := s.sets.GetStatefulSet(ctx, set.Namespace, set.Name)
	if err != nil {
		return nil, err
	}
	if fresh.UID != set.UID {
		return nil, fmt.Errorf("original StatefulSet %s/%s is gone: got uid %s, wanted %s", set.Namespace, set.Name, fresh.UID, set.UID)
	}
	if fresh.DeletionTimestamp != nil {
		return nil, fmt.Errorf("%s/%s has just been deleted at %v", set.Namespace, set.Name, fresh.DeletionTimestamp)
	}
	return fresh, nil
}

// adoptOrphanRevisions adopts the revisions set's selector matches that
// nobody controls.
func (s *syncer) adoptOrphanRevisions(ctx context.Context, set *appsv1.StatefulSet, selector labels.Selector) error {
	revisions, err := s.history.List(set, selector)
	if err != nil {
		return err
	}
	var orphans []*appsv1.ControllerRevision
	for _, r := range revisions {
		if metav1.GetControllerOf(r) == nil {
			orphans = append(orphans, r)
		}
	}
	if len(orphans) == 0 || set.DeletionTimestamp != nil {
		return nil
	}
	if _, err := s.freshSet(ctx, set); err != nil {
		return fmt.Errorf("can not adopt revisions: %w", err)
	}
	for _, r := range orphans {
		if _, err := s.history.Adopt(ctx, set, controllerKind, r); err != nil {
			return err
		}
	}
	return nil
}

// claimPods returns the pods set controls, among those named as its
// members, after adopting matching orphans and releasing owned pods that
// no longer match.
func (s *syncer) claimPods(ctx context.Context, set *appsv1.StatefulSet, selector labels.Selector) ([]*corev1.Pod, error) {
	// Only the pods set controls and the orphans can be claimed: the index
	// gives them without a walk over every pod of the namespace.
	all, err := controller.ControlledOrOrphaned(s.podIndexer, set.Namespace, set.UID)
	if err != nil {
		return nil, err
	}
	return controller.ClaimPods(ctx, controller.RefManagerConfig[*corev1.Pod]{
		Owner:     set,
		OwnerKind: controllerKind,
		Selector:  selector,
		Patcher:   s.api,
		GetOwner: func(ctx context.Context) (metav1.Object, error) {
			return s.sets.GetStatefulSet(ctx, set.Namespace, set.Name)
		},
		Logger: controller.LoggerFrom(ctx),
	}, all, func(p *corev1.Pod) bool { return isMemberOf(set, p) })
}

// updateStatefulSet finds or creates set's current and update revisions,
// makes one round of pod changes, writes the status and prunes the
// history. It returns the status written (nil when none could be made).
func (s *syncer) updateStatefulSet(ctx context.Context, key string, set *appsv1.StatefulSet, selector labels.Selector, pods []*corev1.Pod) (*appsv1.StatefulSetStatus, error) {
	set = set.DeepCopy()
	revisions, err := s.history.List(set, selector)
	if err != nil {
		return nil, err
	}
	history.SortControllerRevisions(revisions)
	current, update, collisionCount, err := s.revisions(ctx, set, revisions)
	if err != nil {
		return nil, errors.Join(err, s.truncateHistory(ctx, set, pods, revisions, current, update))
	}
	status, err := s.reconcilePods(ctx, key, set, current, update, collisionCount, pods)
	if err != nil && status == nil {
		return nil, errors.Join(err, s.truncateHistory(ctx, set, pods, revisions, current, update))
	}
	statusErr := s.writeStatus(ctx, set, status)
	return status, errors.Join(err, statusErr, s.truncateHistory(ctx, set, pods, revisions, current, update))
}

// revisions returns set's current revision (status.currentRevision, or the
// update revision when that is not found) and its update revision (the
// one holding spec.template: the latest revision if it already does, an
// older one renumbered as the latest on a rollback, or a new one), and the
// collision count to record. revisions must be sorted.
func (s *syncer) revisions(ctx context.Context, set *appsv1.StatefulSet, revisions []*appsv1.ControllerRevision) (current, update *appsv1.ControllerRevision, collisionCount int32, err error) {
	if set.Status.CollisionCount != nil {
		collisionCount = *set.Status.CollisionCount
	}
	update, err = newRevision(set, history.NextRevision(revisions), &collisionCount)
	if err != nil {
		return nil, nil, collisionCount, err
	}
	equal := history.FindEqualRevisions(revisions, update)
	switch {
	case len(equal) > 0 && history.EqualRevision(revisions[len(revisions)-1], equal[len(equal)-1]):
		// The template has not changed since the latest revision.
		update = revisions[len(revisions)-1]
	case len(equal) > 0:
		// A rollback to an older template: it becomes the latest revision.
		update, err = s.history.Update(ctx, equal[len(equal)-1], update.Revision)
	default:
		update, err = s.history.Create(ctx, set, update, &collisionCount)
	}
	if err != nil {
		return nil, nil, collisionCount, err
	}
	for _, r := range revisions {
		if r.Name == set.Status.CurrentRevision {
			current = r
			break
		}
	}
	if current == nil {
		current = update
	}
	return current, update, collisionCount, nil
}

// truncateHistory deletes the oldest revisions that are not live (not
// the current or update revision, nor any pod's) beyond
// spec.revisionHistoryLimit (10 when unset). revisions must be sorted.
func (s *syncer) truncateHistory(ctx context.Context, set *appsv1.StatefulSet, pods []*corev1.Pod, revisions []*appsv1.ControllerRevision, current, update *appsv1.ControllerRevision) error {
	live := map[string]bool{}
	if current != nil {
		live[current.Name] = true
	}
	if update != nil {
		live[update.Name] = true
	}
	for _, p := range pods {
		live[podRevision(p)] = true
	}
	var old []*appsv1.ControllerRevision
	for _, r := range revisions {
		if !live[r.Name] {
			old = append(old, r)
		}
	}
	limit := 10
	if set.Spec.RevisionHistoryLimit != nil {
		limit = int(*set.Spec.RevisionHistoryLimit)
	}
	if limit < 0 || len(old) <= limit {
		return nil
	}
	for _, r := range old[:len(old)-limit] {
		if err := s.history.Delete(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// countPods sets the replica counts of status from pods.
func countPods(status *appsv1.StatefulSetStatus, minReadySeconds int32, now time.Time, current, update *appsv1.ControllerRevision, lists ...[]*corev1.Pod) {
	status.Replicas, status.ReadyReplicas, status.AvailableReplicas = 0, 0, 0
	status.CurrentReplicas, status.UpdatedReplicas = 0, 0
	for _, list := range lists {
		for _, p := range list {
			if p == nil {
				continue
			}
			if isCreated(p) {
				status.Replicas++
			}
			if isRunningAndReady(p) {
				status.ReadyReplicas++
				if isRunningAndAvailable(p, minReadySeconds, now) {
					status.AvailableReplicas++
				}
			}
			if isCreated(p) && !isTerminating(p) {
				rev := podRevision(p)
				if rev == current.Name {
					status.CurrentReplicas++
				}
				if rev == update.Name {
					status.UpdatedReplicas++
				}
			}
		}
	}
}

// reconcilePods makes one round of pod changes toward set's spec:
//   - the pods of wanted ordinals that are missing are created (at the
//     current revision below the partition, else the update revision) with
//     their PVCs; failed and succeeded pods are deleted, to be recreated;
//   - pods of ordinals no longer wanted are deleted, highest first;
//   - with RollingUpdate, pods not at the update revision are deleted from
//     the highest ordinal down to the partition, maxUnavailable at a time
//     (one when the gate is off), waiting for unavailable pods.
//
// With OrderedReady, the round stops at the first pod not Running and Ready
// (and available for minReadySeconds), and creates or deletes one pod at
// most; Parallel creates and deletes all it can. Nothing but status happens
// while the set is being deleted or its expectations are unmet.
func (s *syncer) reconcilePods(ctx context.Context, key string, set *appsv1.StatefulSet, current, update *appsv1.ControllerRevision, collisionCount int32, pods []*corev1.Pod) (*appsv1.StatefulSetStatus, error) {
	currentSet, err := applyRevision(set, current)
	if err != nil {
		return nil, err
	}
	updateSet := currentSet
	if update.Name != current.Name {
		if updateSet, err = applyRevision(set, update); err != nil {
			return nil, err
		}
	}
	now := s.clock.Now()
	minReady := set.Spec.MinReadySeconds
	status := &appsv1.StatefulSetStatus{
		ObservedGeneration: set.Generation,
		CurrentRevision:    current.Name,
		UpdateRevision:     update.Name,
		CollisionCount:     ptr.To(collisionCount),
		Conditions:         slices.Clone(set.Status.Conditions),
	}
	countPods(status, minReady, now, current, update, pods)

	start, n := startOrdinal(set), replicasOf(set)
	replicas := make([]*corev1.Pod, n)
	var condemned []*corev1.Pod
	for _, p := range pods {
		switch ord := ordinalOf(p); {
		case inOrdinalRange(p, set):
			replicas[ord-start] = p
		case ord >= 0:
			condemned = append(condemned, p)
		}
	}
	for i := range replicas {
		if replicas[i] == nil {
			replicas[i] = newVersionedPod(currentSet, updateSet, current.Name, update.Name, start+i)
		}
	}
	// Highest ordinal first.
	slices.SortFunc(condemned, func(a, b *corev1.Pod) int { return ordinalOf(b) - ordinalOf(a) })

	var firstUnavailable *corev1.Pod
	for _, p := range replicas {
		if isUnavailable(p, minReady, now) {
			firstUnavailable = p
			break
		}
	}
	if firstUnavailable == nil {
		for i := len(condemned) - 1; i >= 0; i-- {
			if isUnavailable(condemned[i], minReady, now) {
				firstUnavailable = condemned[i]
				break
			}
		}
	}

	if set.DeletionTimestamp != nil || !s.expectations.SatisfiedExpectations(key) {
		return status, nil
	}
	// Start a fresh record: each write below raises it first.
	s.expectations.SetExpectations(key, 0, 0)
	monotonic := set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement
	recount := func() { countPods(status, minReady, now, current, update, replicas, condemned) }

	// Parallel rounds spend goroutines only on the pods that need a write.
	todo := replicas
	if !monotonic {
		todo = slices.DeleteFunc(slices.Clone(replicas), func(p *corev1.Pod) bool { return !s.replicaNeedsWork(set, updateSet, p) })
	}
	if exit, err := runForAll(len(todo), monotonic, func(i int) (bool, error) {
		return s.processReplica(ctx, key, set, updateSet, monotonic, todo[i], now)
	}); exit || err != nil {
		recount()
		return status, err
	}
	if exit, err := runForAll(len(condemned), monotonic, func(i int) (bool, error) {
		match, err := s.claimsMatchRetention(updateSet, condemned[i])
		if err != nil {
			return true, err
		}
		if !match {
			if err := s.updateClaimsForRetention(ctx, updateSet, condemned[i]); err != nil {
				return true, err
			}
		}
		return false, nil
	}); exit || err != nil {
		recount()
		return status, err
	}
	if exit, err := runForAll(len(condemned), monotonic, func(i int) (bool, error) {
		return s.processCondemned(ctx, key, set, firstUnavailable, monotonic, condemned[i], now)
	}); exit || err != nil {
		recount()
		return status, err
	}
	recount()

	if set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		// Pods are updated when someone deletes them.
		return status, nil
	}
	return status, s.rollPods(ctx, key, set, replicas, update, status, now)
}

// processReplica handles the pod of one wanted ordinal and reports whether
// a monotonic round must stop there.
func (s *syncer) processReplica(ctx context.Context, key string, set, updateSet *appsv1.StatefulSet, monotonic bool, pod *corev1.Pod, now time.Time) (bool, error) {
	if isFinished(pod) {
		// Succeeded too: a StatefulSet pod is meant to run for ever.
		if pod.DeletionTimestamp == nil {
			if err := s.deletePod(ctx, key, set, pod); err != nil {
				return true, err
			}
		}
		// Recreated once the deletion is observed.
		return true, nil
	}
	if !isCreated(pod) {
		stale, err := s.podClaimIsStale(set, pod)
		if err != nil || stale {
			return true, err
		}
		if err := s.createPod(ctx, key, set, pod); err != nil {
			return true, err
		}
		if monotonic {
			return true, nil
		}
		return false, nil
	}
	if isPending(pod) {
		if err := s.createMissingClaims(ctx, set, pod); err != nil {
			return true, err
		}
	}
	if monotonic && (isTerminating(pod) || !isRunningAndReady(pod) || !isRunningAndAvailable(pod, set.Spec.MinReadySeconds, now)) {
		return true, nil
	}
	match, err := s.claimsMatchRetention(updateSet, pod)
	if err != nil {
		// Expected while the pod is not fully updated: treated as matching.
		match = true
	}
	if identityMatches(set, pod) && storageMatches(set, pod) && match {
		return false, nil
	}
	if err := s.updatePod(ctx, updateSet, pod); err != nil {
		return true, err
	}
	return false, nil
}

// replicaNeedsWork reports whether processReplica could write anything
// for pod in a Parallel round.
func (s *syncer) replicaNeedsWork(set, updateSet *appsv1.StatefulSet, pod *corev1.Pod) bool {
	if isFinished(pod) || !isCreated(pod) || (isPending(pod) && len(set.Spec.VolumeClaimTemplates) > 0) {
		return true
	}
	if !identityMatches(set, pod) || !storageMatches(set, pod) {
		return true
	}
	match, err := s.claimsMatchRetention(updateSet, pod)
	return err == nil && !match
}

// processCondemned deletes one pod of an ordinal no longer wanted, unless a
// monotonic round must wait, and reports whether a monotonic round stops.
func (s *syncer) processCondemned(ctx context.Context, key string, set *appsv1.StatefulSet, firstUnavailable *corev1.Pod, monotonic bool, pod *corev1.Pod, now time.Time) (bool, error) {
	if isTerminating(pod) {
		return monotonic, nil
	}
	if monotonic && pod != firstUnavailable &&
		(!isRunningAndReady(pod) || !isRunningAndAvailable(pod, set.Spec.MinReadySeconds, now)) {
		// Wait for the unhealthy pod, which goes first.
		return true, nil
	}
	return true, s.deletePod(ctx, key, set, pod)
}

// rollPods deletes the pods of a RollingUpdate that are not at the update
// revision, from the highest ordinal down to the partition.
func (s *syncer) rollPods(ctx context.Context, key string, set *appsv1.StatefulSet, replicas []*corev1.Pod, update *appsv1.ControllerRevision, status *appsv1.StatefulSetStatus, now time.Time) error {
	minReady := set.Spec.MinReadySeconds
	partition, maxUnavailable := 0, 1
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		if ru.Partition != nil {
			partition = int(*ru.Partition)
		}
		if s.maxUnavailable {
			v, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(ru.MaxUnavailable, intstr.FromInt32(1)), len(replicas), false)
			if err != nil {
				return fmt.Errorf("invalid maxUnavailable: %w", err)
			}
			maxUnavailable = max(v, 1)
		}
	}
	if !s.maxUnavailable {
		for target := len(replicas) - 1; target >= partition; target-- {
			p := replicas[target]
			if podRevision(p) != update.Name && !isTerminating(p) {
				status.CurrentReplicas--
				return s.deletePod(ctx, key, set, p)
			}
			if isUnavailable(p, minReady, now) {
				return nil
			}
		}
		return nil
	}
	unavailable := 0
	for _, p := range replicas {
		if isUnavailable(p, minReady, now) {
			unavailable++
		}
	}
	if unavailable > maxUnavailable {
		return nil
	}
	budget := maxUnavailable - unavailable
	for target := len(replicas) - 1; target >= partition && budget > 0; target-- {
		p := replicas[target]
		if podRevision(p) != update.Name && !isTerminating(p) {
			if err := s.deletePod(ctx, key, set, p); err != nil {
				return err
			}
			budget--
			status.CurrentReplicas--
		}
	}
	return nil
}

// runForAll calls fn for 0..n-1: in order, stopping at the first that asks
// to or fails, when monotonic; else in slow-start batches (1, 2, 4, ... up
// to maxBatchSize) run in parallel, stopping after a batch with a failure.
// It reports whether the round stopped early.
func runForAll(n int, monotonic bool, fn func(i int) (bool, error)) (bool, error) {
	if monotonic {
		for i := range n {
			if exit, err := fn(i); exit || err != nil {
				return true, err
			}
		}
		return false, nil
	}
	next := 0
	for batch := min(n, 1); batch > 0; batch = min(2*batch, n-next, maxBatchSize) {
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			errs []error
		)
		for i := next; i < next+batch; i++ {
			wg.Go(func() {
				if _, err := fn(i); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		next += batch
		if len(errs) > 0 {
			return true, errors.Join(errs...)
		}
	}
	return false, nil
}

// writeStatus completes a finished rolling update in status and writes it
// as set's status unless nothing changed. A conflict is retried on a
// fresh read.
func (s *syncer) writeStatus(ctx context.Context, set *appsv1.StatefulSet, status *appsv1.StatefulSetStatus) error {
	if (set.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType || set.Spec.UpdateStrategy.Type == "") &&
		status.UpdatedReplicas == status.Replicas && status.ReadyReplicas == status.Replicas {
		status.CurrentReplicas = status.UpdatedReplicas
		status.CurrentRevision = status.UpdateRevision
	}
	if statusEqual(set.Status, *status) {
		return nil
	}
	for attempt := 0; ; attempt++ {
		next := set.DeepCopy()
		next.Status = *status
		_, err := s.sets.UpdateStatus(ctx, next)
		if err == nil {
			return nil
		}
		if attempt >= statusUpdateRetries || !apierrors.IsConflict(err) {
			return fmt.Errorf("update status of %s/%s: %w", set.Namespace, set.Name, err)
		}
		fresh, gerr := s.sets.GetStatefulSet(ctx, set.Namespace, set.Name)
		if gerr != nil {
			return fmt.Errorf("update status of %s/%s: %w", set.Namespace, set.Name, errors.Join(err, gerr))
		}
		if fresh.UID != set.UID {
			return nil
		}
		set = fresh
	}
}

func statusEqual(a, b appsv1.StatefulSetStatus) bool {
	return a.ObservedGeneration == b.ObservedGeneration && a.Replicas == b.Replicas &&
		a.ReadyReplicas == b.ReadyReplicas && a.AvailableReplicas == b.AvailableReplicas &&
		a.CurrentReplicas == b.CurrentReplicas && a.UpdatedReplicas == b.UpdatedReplicas &&
		a.CurrentRevision == b.CurrentRevision && a.UpdateRevision == b.UpdateRevision &&
		ptr.Equal(a.CollisionCount, b.CollisionCount) &&
		apiequality.Semantic.DeepEqual(a.Conditions, b.Conditions)
}
