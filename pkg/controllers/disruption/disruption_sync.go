package disruption

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/controller"
)

// DeletionTimeout is how long a pod listed in disruptedPods is expected to
// take to be deleted; past it, the entry is dropped.
const DeletionTimeout = 2 * time.Minute

// Event reasons.
const (
	ReasonNoPods                          = "NoPods"
	ReasonCalculateExpectedPodCountFailed = "CalculateExpectedPodCountFailed"
	ReasonUnmanagedPods                   = "UnmanagedPods"
)

// Built-in controller kinds whose scale is read from the informers.
var (
	kindDeployment            = appsv1.SchemeGroupVersion.WithKind("Deployment").GroupKind()
	kindReplicaSet            = appsv1.SchemeGroupVersion.WithKind("ReplicaSet").GroupKind()
	kindStatefulSet           = appsv1.SchemeGroupVersion.WithKind("StatefulSet").GroupKind()
	kindReplicationController = corev1.SchemeGroupVersion.WithKind("ReplicationController").GroupKind()
)

// pdbWriter writes budget status.
type pdbWriter interface {
	UpdateStatus(ctx context.Context, pdb *policyv1.PodDisruptionBudget) error
}

// scaleReader reads the scale subresource of a controller that is not one
// of the built-ins.
type scaleReader interface {
	// Scale returns the uid and spec.replicas of the scale of the object
	// namespace/name of kind gk, or a NotFound error.
	Scale(ctx context.Context, gk schema.GroupKind, namespace, name string) (types.UID, int32, error)
}

// syncer holds what the reconcile logic reads and writes.
type syncer struct {
	pdbLister        *cache.Lister[*policyv1.PodDisruptionBudget]
	podLister        *cache.Lister[*corev1.Pod]
	rsLister         *cache.Lister[*appsv1.ReplicaSet]
	deploymentLister *cache.Lister[*appsv1.Deployment]
	ssLister         *cache.Lister[*appsv1.StatefulSet]
	rcLister         *cache.Lister[*corev1.ReplicationController]
	scales           scaleReader
	pdbs             pdbWriter
	recorder         EventRecorder
	clock            clock.PassiveClock
	// enqueueAfter looks at a key again once a duration has passed.
	enqueueAfter func(key string, d time.Duration)
}

// sync recomputes the status of the budget named by key.
func (s *syncer) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitObjectKey(key)
	if err != nil {
		return controller.Terminal(err)
	}
	pdb, err := s.pdbLister.Namespace(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	err = s.trySync(ctx, pdb)
	if err == nil || apierrors.IsConflict(err) {
		// A conflict is retried without failing safe: the budget changed.
		return err
	}
	controller.LoggerFrom(ctx).Error("computing budget status", "err", err)
	return s.failSafe(ctx, pdb, err)
}

func (s *syncer) trySync(ctx context.Context, pdb *policyv1.PodDisruptionBudget) error {
	pods, err := s.podsFor(pdb)
	if err != nil {
		s.recorder.Event(pdb, corev1.EventTypeWarning, ReasonNoPods, fmt.Sprintf("Failed to get pods: %v", err))
		return err
	}
	if len(pods) == 0 {
		s.recorder.Event(pdb, corev1.EventTypeNormal, ReasonNoPods, "No matching pods found")
	}
	expected, desired, unmanaged, err := s.expectedPodCount(ctx, pdb, pods)
	if err != nil {
		s.recorder.Event(pdb, corev1.EventTypeWarning, ReasonCalculateExpectedPodCountFailed, fmt.Sprintf("Failed to calculate the number of expected pods: %v", err))
		return err
	}
	if len(unmanaged) > 0 {
		s.recorder.Event(pdb, corev1.EventTypeWarning, ReasonUnmanagedPods, fmt.Sprintf(
			"Pods selected by this PodDisruptionBudget (selector: %v) were found to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. To account for these pods please set \".spec.minAvailable\" field of the PDB to an integer value.",
			metav1.FormatLabelSelector(pdb.Spec.Selector)))
	}
	now := s.clock.Now()
	disrupted, recheck := disruptedPods(pdb, pods, now)
	healthy := countHealthy(pods, disrupted, now)
	if err := s.updateStatus(ctx, pdb, healthy, desired, expected, disrupted); err != nil {
		return err
	}
	if recheck != nil {
		s.enqueueAfter(keyOf(pdb), recheck.Sub(now))
	}
	return nil
}

// podsFor lists the pods pdb covers.
func (s *syncer) podsFor(pdb *policyv1.PodDisruptionBudget) ([]*corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("invalid selector: %w", err)
	}
	return s.podLister.Namespace(pdb.Namespace).List(sel)
}

// expectedPodCount returns expectedPods and desiredHealthy, and the names
// of the covered pods without a controller when scales were needed.
func (s *syncer) expectedPodCount(ctx context.Context, pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod) (expected, desired int32, unmanaged []string, err error) {
	switch {
	case pdb.Spec.MaxUnavailable != nil:
		expected, unmanaged, err = s.expectedScale(ctx, pdb, pods)
		if err != nil {
			return 0, 0, nil, err
		}
		maxUnavailable, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, int(expected), true)
		if err != nil {
			return 0, 0, nil, fmt.Errorf("maxUnavailable: %w", err)
		}
		desired = max(expected-int32(maxUnavailable), 0)
	case pdb.Spec.MinAvailable != nil && pdb.Spec.MinAvailable.Type == intstr.Int:
		desired = pdb.Spec.MinAvailable.IntVal
		expected = int32(len(pods))
	case pdb.Spec.MinAvailable != nil:
		expected, unmanaged, err = s.expectedScale(ctx, pdb, pods)
		if err != nil {
			return 0, 0, nil, err
		}
		minAvailable, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, int(expected), true)
		if err != nil {
			return 0, 0, nil, fmt.Errorf("minAvailable: %w", err)
		}
		desired = int32(minAvailable)
	}
	return expected, desired, unmanaged, nil
}

// expectedScale sums the scales of the controllers of pods, each once.
func (s *syncer) expectedScale(ctx context.Context, pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod) (int32, []string, error) {
	scales := map[types.UID]int32{}
	var unmanaged []string
	for _, pod := range pods {
		ref := metav1.GetControllerOf(pod)
		if ref == nil {
			unmanaged = append(unmanaged, pod.Name)
			continue
		}
		if _, ok := scales[ref.UID]; ok {
			continue
		}
		uid, scale, found, err := s.controllerScale(ctx, pod.Namespace, ref)
		if err != nil {
			return 0, nil, err
		}
		if !found {
			return 0, nil, fmt.Errorf("found no controllers for pod %q", pod.Name)
		}
		// Keyed by the scaled controller (a Deployment, for the pods of its
		// ReplicaSets) so that it counts once.
		scales[ref.UID] = 0
		scales[uid] = scale
	}
	var sum int32
	for _, n := range scales {
		sum += n
	}
	return sum, unmanaged, nil
}

// controllerScale finds the controller ref names and the scale that
// counts for it: a ReplicaSet controlled by a Deployment counts as the
// Deployment. found is false when no such controller exists (with that
// uid).
func (s *syncer) controllerScale(ctx context.Context, namespace string, ref *metav1.OwnerReference) (uid types.UID, scale int32, found bool, err error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return "", 0, false, fmt.Errorf("controller of pod: %w", err)
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
	switch gk {
	case kindReplicaSet:
		rs, err := s.rsLister.Namespace(namespace).Get(ref.Name)
		if apierrors.IsNotFound(err) || (err == nil && rs.UID != ref.UID) {
			return "", 0, false, nil
		}
		if err != nil {
			return "", 0, false, err
		}
		if owner := metav1.GetControllerOf(rs); owner != nil && owner.Kind == kindDeployment.Kind && groupOf(owner) == kindDeployment.Group {
			d, err := s.deploymentLister.Namespace(namespace).Get(owner.Name)
			if apierrors.IsNotFound(err) || (err == nil && d.UID != owner.UID) {
				return "", 0, false, nil
			}
			if err != nil {
				return "", 0, false, err
			}
			return d.UID, replicas(d.Spec.Replicas), true, nil
		}
		return rs.UID, replicas(rs.Spec.Replicas), true, nil
	case kindStatefulSet:
		ss, err := s.ssLister.Namespace(namespace).Get(ref.Name)
		if apierrors.IsNotFound(err) || (err == nil && ss.UID != ref.UID) {
			return "", 0, false, nil
		}
		if err != nil {
			return "", 0, false, err
		}
		return ss.UID, replicas(ss.Spec.Replicas), true, nil
	case kindReplicationController:
		rc, err := s.rcLister.Namespace(namespace).Get(ref.Name)
		if apierrors.IsNotFound(err) || (err == nil && rc.UID != ref.UID) {
			return "", 0, false, nil
		}
		if err != nil {
			return "", 0, false, err
		}
		return rc.UID, replicas(rc.Spec.Replicas), true, nil
	case kindDeployment:
		// Pods are not controlled by Deployments directly.
		return "", 0, false, nil
	}
	gotUID, n, err := s.scales.Scale(ctx, gk, namespace, ref.Name)
	if apierrors.IsNotFound(err) || (err == nil && gotUID != ref.UID) {
		return "", 0, false, nil
	}
	if err != nil {
		return "", 0, false, fmt.Errorf("scale of %s %s/%s: %w", gk, namespace, ref.Name, err)
	}
	return gotUID, n, true, nil
}

func groupOf(ref *metav1.OwnerReference) string {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return ""
	}
	return gv.Group
}

// replicas is spec.replicas, 1 when unset as the API defaults it.
func replicas(n *int32) int32 {
	if n == nil {
		return 1
	}
	return *n
}

// disruptedPods is pdb's disruptedPods less the entries of pods being
// deleted, gone, or listed more than DeletionTimeout before now, and when
// the earliest remaining entry expires (nil if none remain).
func disruptedPods(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod, now time.Time) (map[string]metav1.Time, *time.Time) {
	out := map[string]metav1.Time{}
	if pdb.Status.DisruptedPods == nil {
		return out, nil
	}
	var recheck *time.Time
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		at, ok := pdb.Status.DisruptedPods[pod.Name]
		if !ok {
			continue
		}
		expires := at.Add(DeletionTimeout)
		if expires.Before(now) {
			continue
		}
		if recheck == nil || expires.Before(*recheck) {
			recheck = &expires
		}
		out[pod.Name] = at
	}
	return out, recheck
}

// countHealthy counts the ready pods neither being deleted nor expected
// to be deleted soon.
func countHealthy(pods []*corev1.Pod, disrupted map[string]metav1.Time, now time.Time) int32 {
	var n int32
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		if at, ok := disrupted[pod.Name]; ok && at.Add(DeletionTimeout).After(now) {
			continue
		}
		if isPodReady(pod) {
			n++
		}
	}
	return n
}

func isPodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// updateStatus writes the computed status unless pdb already has it.
func (s *syncer) updateStatus(ctx context.Context, pdb *policyv1.PodDisruptionBudget, healthy, desired, expected int32, disrupted map[string]metav1.Time) error {
	allowed := healthy - desired
	if expected <= 0 || allowed <= 0 {
		allowed = 0
	}
	st := pdb.Status
	if st.CurrentHealthy == healthy && st.DesiredHealthy == desired && st.ExpectedPods == expected &&
		st.DisruptionsAllowed == allowed && apiequality.Semantic.DeepEqual(st.DisruptedPods, disrupted) &&
		st.ObservedGeneration == pdb.Generation && conditionUpToDate(pdb) {
		return nil
	}
	next := pdb.DeepCopy()
	next.Status = policyv1.PodDisruptionBudgetStatus{
		CurrentHealthy:     healthy,
		DesiredHealthy:     desired,
		ExpectedPods:       expected,
		DisruptionsAllowed: allowed,
		DisruptedPods:      disrupted,
		ObservedGeneration: pdb.Generation,
		Conditions:         next.Status.Conditions,
	}
	setAllowedCondition(next, s.clock.Now())
	return s.pdbs.UpdateStatus(ctx, next)
}

// failSafe writes disruptionsAllowed 0 and the SyncFailed condition, so
// that no eviction is let through on a status that could not be computed.
func (s *syncer) failSafe(ctx context.Context, pdb *policyv1.PodDisruptionBudget, cause error) error {
	next := pdb.DeepCopy()
	next.Status.DisruptionsAllowed = 0
	setCondition(next, metav1.Condition{
		Type:               policyv1.DisruptionAllowedCondition,
		Status:             metav1.ConditionFalse,
		Reason:             policyv1.SyncFailedReason,
		Message:            cause.Error(),
		ObservedGeneration: next.Status.ObservedGeneration,
	}, s.clock.Now())
	return s.pdbs.UpdateStatus(ctx, next)
}

// setAllowedCondition sets DisruptionAllowed from disruptionsAllowed.
func setAllowedCondition(pdb *policyv1.PodDisruptionBudget, now time.Time) {
	c := metav1.Condition{
		Type:               policyv1.DisruptionAllowedCondition,
		Status:             metav1.ConditionFalse,
		Reason:             policyv1.InsufficientPodsReason,
		ObservedGeneration: pdb.Status.ObservedGeneration,
	}
	if pdb.Status.DisruptionsAllowed > 0 {
		c.Status, c.Reason = metav1.ConditionTrue, policyv1.SufficientPodsReason
	}
	setCondition(pdb, c, now)
}

// setCondition sets c among pdb's conditions, its transition time now if
// its status changes.
func setCondition(pdb *policyv1.PodDisruptionBudget, c metav1.Condition, now time.Time) {
	if pdb.Status.Conditions == nil {
		pdb.Status.Conditions = []metav1.Condition{}
	}
	c.LastTransitionTime = metav1.NewTime(now.Truncate(time.Second))
	apimeta.SetStatusCondition(&pdb.Status.Conditions, c)
}

// conditionUpToDate reports whether DisruptionAllowed says what the
// status's numbers say, for the observed generation.
func conditionUpToDate(pdb *policyv1.PodDisruptionBudget) bool {
	c := apimeta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition)
	if c == nil || c.ObservedGeneration != pdb.Status.ObservedGeneration {
		return false
	}
	if pdb.Status.DisruptionsAllowed > 0 {
		return c.Status == metav1.ConditionTrue && c.Reason == policyv1.SufficientPodsReason
	}
	return c.Status == metav1.ConditionFalse && c.Reason == policyv1.InsufficientPodsReason
}

// keyOf is a namespaced object's queue key.
func keyOf(obj metav1.Object) string { return obj.GetNamespace() + "/" + obj.GetName() }
