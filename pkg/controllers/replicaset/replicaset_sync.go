package replicaset

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/controller"
)

// Event reasons.
const (
	ReasonSuccessfulCreate = "SuccessfulCreate"
	ReasonFailedCreate     = "FailedCreate"
	ReasonSuccessfulDelete = "SuccessfulDelete"
	ReasonFailedDelete     = "FailedDelete"
)

// slowStartInitialBatch is the size of the first batch of creations.
const slowStartInitialBatch = 1

// statusUpdateRetries is how many times a conflicting status write is
// retried on a fresh read within one sync.
const statusUpdateRetries = 1

// podWriter is the part of the API the sync writes pods through.
type podWriter interface {
	CreatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error)
	// DeletePod deletes namespace/name only if its uid is still uid.
	DeletePod(ctx context.Context, namespace, name string, uid types.UID) error
	controller.Patcher
}

// replicaSetWriter reads ReplicaSets past the cache and writes their status.
type replicaSetWriter = StatusWriter

// syncer holds what the reconcile logic reads and writes.
type syncer struct {
	rsLister  *cache.Lister[*appsv1.ReplicaSet]
	podLister *cache.Lister[*corev1.Pod]
	// podIndexer backs podLister and has controller.ControllerUIDIndex.
	podIndexer  *cache.Indexer[*corev1.Pod]
	pods        podWriter
	replicaSets replicaSetWriter
	// kind is the kind of the managed objects (Source.Kind); empty means
	// ReplicaSet.
	kind     schema.GroupVersionKind
	recorder EventRecorder
	// expectations holds a ReplicaSet back from creating or deleting until
	// the pod informer has seen its previous creations and deletions.
	expectations *controller.UIDTrackingExpectations
	clock        clock.PassiveClock
	// enqueueAfter looks at a key again once a duration has passed.
	enqueueAfter  func(key string, d time.Duration)
	burstReplicas int
	// countTerminating reports status.terminatingReplicas
	// (DeploymentReplicaSetTerminatingReplicas).
	countTerminating bool
}

// sync makes the ReplicaSet named by key control spec.replicas active pods
// and writes its status.
func (s *syncer) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitObjectKey(key)
	if err != nil {
		return controller.Terminal(err)
	}
	rs, err := s.rsLister.Namespace(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		s.expectations.DeleteExpectations(key)
		return nil
	}
	if err != nil {
		return err
	}
	needsSync := s.expectations.SatisfiedExpectations(key)
	selector, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil {
		// Validation should have refused it; retrying cannot help.
		return controller.Terminal(fmt.Errorf("invalid selector: %w", err))
	}

	// Only the pods rs controls and the orphans can be claimed: the index
	// gives them without a walk over every pod of the namespace.
	all, err := controller.ControlledOrOrphaned(s.podIndexer, namespace, rs.UID)
	if err != nil {
		return err
	}
	pods, err := s.claimPods(ctx, rs, selector, filterActivePods(all))
	if err != nil {
		return err
	}

	var manageErr error
	if needsSync && rs.DeletionTimestamp == nil {
		manageErr = s.manageReplicas(ctx, key, pods, rs)
	}
	now := s.clock.Now()
	newStatus := calculateStatus(rs, pods, manageErr, now)
	if s.countTerminating {
		n := countTerminating(rs, selector, all)
		newStatus.TerminatingReplicas = &n
	} else {
		newStatus.TerminatingReplicas = nil
	}
	updated, err := s.updateStatus(ctx, rs, newStatus)
	if err != nil {
		// Retried with the key; the manage error, if any, is seen again then.
		return errors.Join(manageErr, err)
	}
	if manageErr == nil && updated.Spec.MinReadySeconds > 0 &&
		updated.Status.ReadyReplicas == replicasOf(updated) &&
		updated.Status.AvailableReplicas != replicasOf(updated) {
		s.enqueueAfter(key, time.Duration(updated.Spec.MinReadySeconds)*time.Second)
	}
	return manageErr
}

// claimPods returns the active pods rs controls after adopting matching
// orphans and releasing owned pods that no longer match.
func (s *syncer) claimPods(ctx context.Context, rs *appsv1.ReplicaSet, selector labels.Selector, pods []*corev1.Pod) ([]*corev1.Pod, error) {
	return controller.ClaimPods(ctx, controller.RefManagerConfig[*corev1.Pod]{
		Owner:     rs,
		OwnerKind: s.ownerKind(),
		Selector:  selector,
		Patcher:   s.pods,
		GetOwner: func(ctx context.Context) (metav1.Object, error) {
			return s.replicaSets.GetReplicaSet(ctx, rs.Namespace, rs.Name)
		},
		Logger: controller.LoggerFrom(ctx),
	}, pods)
}

// manageReplicas creates or deletes pods so that rs controls spec.replicas
// of them, at most burstReplicas in one call.
func (s *syncer) manageReplicas(ctx context.Context, key string, pods []*corev1.Pod, rs *appsv1.ReplicaSet) error {
	diff := len(pods) - int(replicasOf(rs))
	switch {
	case diff < 0:
		diff = min(-diff, s.burstReplicas)
		// Expect before creating: an informer may deliver a created pod
		// before the create call returns.
		s.expectations.ExpectCreations(key, diff)
		controller.LoggerFrom(ctx).Debug("too few replicas", "need", replicasOf(rs), "creating", diff)
		created, err := slowStartBatch(diff, slowStartInitialBatch, func() error {
			return s.createPod(ctx, rs)
		})
		// The creations that failed or were never tried will not be
		// observed: stop waiting for them.
		if skipped := diff - created; skipped > 0 {
			s.expectations.LowerExpectations(key, skipped, 0)
		}
		return err

	case diff > 0:
		diff = min(diff, s.burstReplicas)
		related, err := s.relatedPods(rs)
		if err != nil {
			return err
		}
		victims := podsToDelete(pods, related, diff)
		ids := make([]string, len(victims))
		for i, p := range victims {
			ids[i] = podKey(p)
		}
		s.expectations.ExpectDeletions(key, ids)
		controller.LoggerFrom(ctx).Debug("too many replicas", "need", replicasOf(rs), "deleting", diff)
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			errs []error
		)
		for _, pod := range victims {
			wg.Go(func() {
				if err := s.deletePod(ctx, rs, pod); err != nil {
					// This deletion will not be observed.
					s.expectations.DeletionObserved(key, podKey(pod))
					if !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
					}
				}
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	return nil
}

// createPod creates one pod from rs's template and records the outcome.
func (s *syncer) createPod(ctx context.Context, rs *appsv1.ReplicaSet) error {
	pod := podFromTemplate(rs, s.ownerKind())
	created, err := s.pods.CreatePod(ctx, pod)
	if err != nil {
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			// The namespace is going away; so is the ReplicaSet.
			return nil
		}
		s.recorder.Event(rs, corev1.EventTypeWarning, ReasonFailedCreate, fmt.Sprintf("Error creating: %v", err))
		return err
	}
	s.recorder.Event(rs, corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created pod: "+created.Name)
	return nil
}

// deletePod deletes pod if it is still the one rs chose, and records the
// outcome.
func (s *syncer) deletePod(ctx context.Context, rs *appsv1.ReplicaSet, pod *corev1.Pod) error {
	err := s.pods.DeletePod(ctx, pod.Namespace, pod.Name, pod.UID)
	if err != nil {
		if !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			s.recorder.Event(rs, corev1.EventTypeWarning, ReasonFailedDelete, fmt.Sprintf("Error deleting: %v", err))
		}
		return err
	}
	s.recorder.Event(rs, corev1.EventTypeNormal, ReasonSuccessfulDelete, "Deleted pod: "+pod.Name)
	return nil
}

// podFromTemplate is a new pod as rs's template describes it, controlled by
// rs, of kind kind.
func podFromTemplate(rs *appsv1.ReplicaSet, kind schema.GroupVersionKind) *corev1.Pod {
	t := rs.Spec.Template.DeepCopy()
	yes := true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    rs.Namespace,
			GenerateName: podNamePrefix(rs.Name),
			Labels:       t.Labels,
			Annotations:  t.Annotations,
			Finalizers:   t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         kind.GroupVersion().String(),
				Kind:               kind.Kind,
				Name:               rs.Name,
				UID:                rs.UID,
				Controller:         &yes,
				BlockOwnerDeletion: &yes,
			}},
		},
		Spec: t.Spec,
	}
	return pod
}

// podNamePrefix is "<name>-", or the bare name where that would not be a
// valid generateName prefix.
func podNamePrefix(name string) string {
	prefix := name + "-"
	// The API server appends 5 characters to the prefix.
	if len(validation.IsDNS1123Subdomain(prefix+"xxxxx")) != 0 {
		return name
	}
	return prefix
}

// slowStartBatch calls fn count times, in batches that start at initial
// and double while every call of a batch succeeds. The calls of a batch run
// in parallel. It returns how many calls succeeded and the first error, and
// stops after the first batch with an error.
func slowStartBatch(count, initial int, fn func() error) (int, error) {
	remaining := count
	successes := 0
	for batch := min(remaining, initial); batch > 0; batch = min(2*batch, remaining) {
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			firstErr error
		)
		for range batch {
			wg.Go(func() {
				err := fn()
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					successes++
				} else if firstErr == nil {
					firstErr = err
				}
			})
		}
		wg.Wait()
		if firstErr != nil {
			return successes, firstErr
		}
		remaining -= batch
	}
	return successes, nil
}

// filterActivePods drops pods that are finished or being deleted.
func filterActivePods(pods []*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(pods))
	for _, p := range pods {
		if isPodActive(p) {
			out = append(out, p)
		}
	}
	return out
}

func isPodActive(p *corev1.Pod) bool {
	return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed && p.DeletionTimestamp == nil
}

// replicasOf is spec.replicas, 1 when unset as the API defaults it.
func replicasOf(rs *appsv1.ReplicaSet) int32 {
	if rs.Spec.Replicas == nil {
		return 1
	}
	return *rs.Spec.Replicas
}

// calculateStatus is the status rs should have with pods, the active pods
// it controls, after manageReplicas returned manageErr.
func calculateStatus(rs *appsv1.ReplicaSet, pods []*corev1.Pod, manageErr error, now time.Time) appsv1.ReplicaSetStatus {
	st := *rs.Status.DeepCopy()
	templateLabels := labels.SelectorFromSet(rs.Spec.Template.Labels)
	var fullyLabeled, ready, available int32
	for _, p := range pods {
		if templateLabels.Matches(labels.Set(p.Labels)) {
			fullyLabeled++
		}
		if isPodReady(p) {
			ready++
			if isPodAvailable(p, rs.Spec.MinReadySeconds, now) {
				available++
			}
		}
	}
	failure := replicaFailureIndex(st.Conditions)
	switch {
	case manageErr != nil && failure < 0:
		reason := ""
		switch diff := len(pods) - int(replicasOf(rs)); {
		case diff < 0:
			reason = ReasonFailedCreate
		case diff > 0:
			reason = ReasonFailedDelete
		}
		st.Conditions = append(st.Conditions, appsv1.ReplicaSetCondition{
			Type:               appsv1.ReplicaSetReplicaFailure,
			Status:             corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now),
			Reason:             reason,
			Message:            manageErr.Error(),
		})
	case manageErr == nil && failure >= 0:
		st.Conditions = append(st.Conditions[:failure:failure], st.Conditions[failure+1:]...)
	}
	st.Replicas = int32(len(pods))
	st.FullyLabeledReplicas = fullyLabeled
	st.ReadyReplicas = ready
	st.AvailableReplicas = available
	return st
}

func replicaFailureIndex(conds []appsv1.ReplicaSetCondition) int {
	for i, c := range conds {
		if c.Type == appsv1.ReplicaSetReplicaFailure {
			return i
		}
	}
	return -1
}

// updateStatus writes st as rs's status with observedGeneration set,
// unless nothing would change. A conflict is retried on a fresh read.
func (s *syncer) updateStatus(ctx context.Context, rs *appsv1.ReplicaSet, st appsv1.ReplicaSetStatus) (*appsv1.ReplicaSet, error) {
	if rs.Status.ObservedGeneration == rs.Generation && statusCountsEqual(rs.Status, st) &&
		apiequality.Semantic.DeepEqual(rs.Status.Conditions, st.Conditions) {
		return rs, nil
	}
	st.ObservedGeneration = rs.Generation
	for attempt := 0; ; attempt++ {
		next := rs.DeepCopy()
		next.Status = st
		updated, err := s.replicaSets.UpdateStatus(ctx, next)
		if err == nil {
			return updated, nil
		}
		if attempt >= statusUpdateRetries || !apierrors.IsConflict(err) {
			return nil, fmt.Errorf("update status of %s/%s: %w", rs.Namespace, rs.Name, err)
		}
		fresh, gerr := s.replicaSets.GetReplicaSet(ctx, rs.Namespace, rs.Name)
		if gerr != nil {
			return nil, fmt.Errorf("update status of %s/%s: %w", rs.Namespace, rs.Name, errors.Join(err, gerr))
		}
		if fresh.UID != rs.UID {
			// Replaced under the same name: the new one gets its own sync.
			return rs, nil
		}
		rs = fresh
		st.ObservedGeneration = rs.Generation
	}
}

func statusCountsEqual(a, b appsv1.ReplicaSetStatus) bool {
	return a.Replicas == b.Replicas && a.FullyLabeledReplicas == b.FullyLabeledReplicas &&
		a.ReadyReplicas == b.ReadyReplicas && a.AvailableReplicas == b.AvailableReplicas &&
		ptr.Equal(a.TerminatingReplicas, b.TerminatingReplicas)
}

// countTerminating counts the pods rs controls and still selects that are
// being deleted and have not finished.
func countTerminating(rs *appsv1.ReplicaSet, selector labels.Selector, pods []*corev1.Pod) int32 {
	var n int32
	for _, p := range pods {
		if p.DeletionTimestamp == nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == rs.UID && selector.Matches(labels.Set(p.Labels)) {
			n++
		}
	}
	return n
}

// isPodReady reports whether the pod's Ready condition is True.
func isPodReady(p *corev1.Pod) bool {
	c := podCondition(p, corev1.PodReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

// isPodAvailable reports whether the pod has been ready for at least
// minReadySeconds at now.
func isPodAvailable(p *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	c := podCondition(p, corev1.PodReady)
	if c == nil || c.Status != corev1.ConditionTrue {
		return false
	}
	if minReadySeconds == 0 {
		return true
	}
	min := time.Duration(minReadySeconds) * time.Second
	return !c.LastTransitionTime.IsZero() && !c.LastTransitionTime.Add(min).After(now)
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// podsToDelete picks the n pods to delete first, by ActivePodsLess with
// each pod ranked by how many active pods of related share its node.
func podsToDelete(pods, related []*corev1.Pod, n int) []*corev1.Pod {
	if n >= len(pods) {
		return pods
	}
	onNode := map[string]int{}
	for _, p := range related {
		if isPodActive(p) {
			onNode[p.Spec.NodeName]++
		}
	}
	ranked := make([]rankedPod, len(pods))
	for i, p := range pods {
		ranked[i] = rankedPod{pod: p, rank: onNode[p.Spec.NodeName]}
	}
	sort.SliceStable(ranked, func(i, j int) bool {
		return ActivePodsLess(ranked[i].pod, ranked[j].pod, ranked[i].rank, ranked[j].rank)
	})
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = ranked[i].pod
	}
	return out
}

// relatedPods returns the pods selected by rs and by every other
// ReplicaSet with the same controller (the ReplicaSets of one Deployment),
// each pod once: scaling down prefers pods whose node runs many of them.
// A ReplicaSet without a controller has no related pods.
func (s *syncer) relatedPods(rs *appsv1.ReplicaSet) ([]*corev1.Pod, error) {
	ref := metav1.GetControllerOf(rs)
	if ref == nil {
		return nil, nil
	}
	rss, err := s.rsLister.Namespace(rs.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	seen := map[types.UID]bool{}
	var out []*corev1.Pod
	for _, other := range rss {
		if r := metav1.GetControllerOf(other); r == nil || r.UID != ref.UID {
			continue
		}
		selector, err := metav1.LabelSelectorAsSelector(other.Spec.Selector)
		if err != nil {
			// An invalid selector matches no pods.
			continue
		}
		pods, err := s.podLister.Namespace(rs.Namespace).List(selector)
		if err != nil {
			return nil, err
		}
		for _, p := range pods {
			if !seen[p.UID] {
				seen[p.UID] = true
				out = append(out, p)
			}
		}
	}
	return out, nil
}
