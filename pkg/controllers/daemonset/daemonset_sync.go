package daemonset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/controller"
)

// Event reasons.
const (
	ReasonSuccessfulCreate = "SuccessfulCreate"
	ReasonFailedCreate     = "FailedCreate"
	ReasonSuccessfulDelete = "SuccessfulDelete"
	ReasonFailedDelete     = "FailedDelete"
	// ReasonFailedDaemonPod: a daemon pod failed and is replaced.
	ReasonFailedDaemonPod = "FailedDaemonPod"
	// ReasonSelectingAll: the DaemonSet's selector is empty; it does nothing.
	ReasonSelectingAll = "SelectingAll"
)

// statusUpdateRetries is how many times a failed status write is retried
// on a fresh read within one sync.
const statusUpdateRetries = 1

// podWriter is the part of the API the sync writes pods through.
type podWriter interface {
	CreatePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error)
	// DeletePod deletes namespace/name only if its uid is still uid.
	DeletePod(ctx context.Context, namespace, name string, uid types.UID) error
	controller.Patcher
}

// daemonSetWriter reads DaemonSets past the cache and writes their status.
type daemonSetWriter interface {
	GetDaemonSet(ctx context.Context, namespace, name string) (*appsv1.DaemonSet, error)
	UpdateStatus(ctx context.Context, ds *appsv1.DaemonSet) (*appsv1.DaemonSet, error)
}

// revisionWriter writes ControllerRevisions.
type revisionWriter interface {
	CreateRevision(ctx context.Context, rev *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error)
	GetRevision(ctx context.Context, namespace, name string) (*appsv1.ControllerRevision, error)
	UpdateRevision(ctx context.Context, rev *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error)
	DeleteRevision(ctx context.Context, namespace, name string) error
	PatchRevision(ctx context.Context, namespace, name string, pt types.PatchType, data []byte) error
}

// syncer holds what the reconcile logic reads and writes.
type syncer struct {
	dsLister *cache.Lister[*appsv1.DaemonSet]
	// podIndexer is the pod cache; it has controller.ControllerUIDIndex.
	podIndexer *cache.Indexer[*corev1.Pod]
	nodeLister *cache.Lister[*corev1.Node]
	revLister  *cache.Lister[*appsv1.ControllerRevision]
	pods       podWriter
	daemonSets daemonSetWriter
	revisions  revisionWriter
	recorder   EventRecorder
	// expectations holds a DaemonSet back from creating or deleting until
	// the pod informer has seen its previous creations and deletions.
	expectations *controller.UIDTrackingExpectations
	clock        clock.PassiveClock
	// backoff spaces out the replacement of failed pods per node.
	backoff *backoff
	// enqueueAfter looks at a key again once a duration has passed.
	enqueueAfter  func(key string, d time.Duration)
	burstReplicas int
}

// sync makes the DaemonSet named by key run one pod on every node it
// should, rolls its pods to the current template, prunes its history and
// writes its status.
func (s *syncer) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitObjectKey(key)
	if err != nil {
		return controller.Terminal(err)
	}
	ds, err := s.dsLister.Namespace(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		s.expectations.DeleteExpectations(key)
		return nil
	}
	if err != nil {
		return err
	}
	nodes, err := s.nodeLister.List(labels.Everything())
	if err != nil {
		return err
	}
	if ds.Spec.Selector == nil || len(ds.Spec.Selector.MatchLabels)+len(ds.Spec.Selector.MatchExpressions) == 0 {
		s.recorder.Event(ds, corev1.EventTypeWarning, ReasonSelectingAll, "This daemon set is selecting all pods. A non-empty selector is required.")
		return nil
	}
	if ds.DeletionTimestamp != nil {
		// The garbage collector removes its pods; creating more would race it.
		return nil
	}
	cur, old, err := s.constructHistory(ctx, ds)
	if err != nil {
		return fmt.Errorf("construct revisions: %w", err)
	}
	hash := cur.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]
	if !s.expectations.SatisfiedExpectations(key) {
		// Wait for the informer to show the last creations and deletions;
		// report what is known meanwhile, without claiming the generation.
		return s.updateStatus(ctx, ds, nodes, hash, false)
	}
	if err := s.manage(ctx, key, ds, nodes, hash); err != nil {
		return err
	}
	if s.expectations.SatisfiedExpectations(key) && ds.Spec.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		if err := s.rollingUpdate(ctx, key, ds, nodes, hash); err != nil {
			return err
		}
	}
	if err := s.cleanupHistory(ctx, ds, old); err != nil {
		return fmt.Errorf("clean up revisions: %w", err)
	}
	return s.updateStatus(ctx, ds, nodes, hash, true)
}

// freshOwner reads ds past the cache, for the adoption guard.
func (s *syncer) freshOwner(ds *appsv1.DaemonSet) func(ctx context.Context) (metav1.Object, error) {
	return func(ctx context.Context) (metav1.Object, error) {
		return s.daemonSets.GetDaemonSet(ctx, ds.Namespace, ds.Name)
	}
}

// daemonPods returns the pods ds controls, after adoption and release,
// leaving out finished pods that are being deleted.
func (s *syncer) daemonPods(ctx context.Context, ds *appsv1.DaemonSet) ([]*corev1.Pod, error) {
	selector, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return nil, controller.Terminal(fmt.Errorf("invalid selector: %w", err))
	}
	// Only the pods ds controls and the orphans can be claimed: the index
	// gives them without a walk over every pod of the namespace.
	all, err := controller.ControlledOrOrphaned(s.podIndexer, ds.Namespace, ds.UID)
	if err != nil {
		return nil, err
	}
	pods := slices.DeleteFunc(all, func(p *corev1.Pod) bool { return p.DeletionTimestamp != nil && isTerminal(p) })
	return controller.ClaimPods(ctx, controller.RefManagerConfig[*corev1.Pod]{
		Owner: ds, OwnerKind: daemonSetKind, Selector: selector,
		Patcher: s.pods, GetOwner: s.freshOwner(ds), Logger: controller.LoggerFrom(ctx),
	}, pods)
}

// nodesToDaemonPods maps each node name to the pods of ds meant for it,
// bound first, then oldest first. A pod whose node can not be told is left out.
func (s *syncer) nodesToDaemonPods(ctx context.Context, ds *appsv1.DaemonSet) (map[string][]*corev1.Pod, error) {
	pods, err := s.daemonPods(ctx, ds)
	if err != nil {
		return nil, err
	}
	out := map[string][]*corev1.Pod{}
	for _, p := range pods {
		node, err := targetNodeName(p)
		if err != nil {
			controller.LoggerFrom(ctx).Warn("daemon pod has no target node", "pod", p.Name, "err", err)
			continue
		}
		out[node] = append(out[node], p)
	}
	for _, ps := range out {
		slices.SortStableFunc(ps, compareDaemonPods)
	}
	return out, nil
}

// manage creates the missing daemon pods and deletes the surplus, failed,
// succeeded and misplaced ones.
func (s *syncer) manage(ctx context.Context, key string, ds *appsv1.DaemonSet, nodes []*corev1.Node, hash string) error {
	byNode, err := s.nodesToDaemonPods(ctx, ds)
	if err != nil {
		return fmt.Errorf("list daemon pods: %w", err)
	}
	var needing []string
	var toDelete []*corev1.Pod
	known := make(map[string]bool, len(nodes))
	for _, node := range nodes {
		known[node.Name] = true
		n, d := s.podsShouldBeOnNode(ctx, key, node, byNode[node.Name], ds, hash)
		if n {
			needing = append(needing, node.Name)
		}
		toDelete = append(toDelete, d...)
	}
	// A pod not yet bound whose node is gone can never be bound: delete it.
	// A bound one is the pod garbage collector's.
	for node, pods := range byNode {
		if known[node] {
			continue
		}
		for _, p := range pods {
			if p.Spec.NodeName == "" && p.DeletionTimestamp == nil {
				toDelete = append(toDelete, p)
			}
		}
	}
	return s.syncNodes(ctx, key, ds, toDelete, needing, hash)
}

// podsShouldBeOnNode decides for one node: whether it needs a new daemon
// pod, and which of pods (ds's pods for it, oldest first) to delete.
func (s *syncer) podsShouldBeOnNode(ctx context.Context, key string, node *corev1.Node, pods []*corev1.Pod, ds *appsv1.DaemonSet, hash string) (needsPod bool, toDelete []*corev1.Pod) {
	shouldRun, shouldContinue := NodeShouldRunDaemonPod(node, ds)
	switch {
	case shouldRun && len(pods) == 0:
		return true, nil
	case shouldContinue:
		var running []*corev1.Pod
		for _, p := range pods {
			if p.DeletionTimestamp != nil {
				continue
			}
			switch p.Status.Phase {
			case corev1.PodFailed:
				bkey := string(ds.UID) + "/" + node.Name
				if left, in := s.backoff.inBackoff(bkey); in {
					controller.LoggerFrom(ctx).Debug("failed daemon pod in back-off", "pod", p.Name, "node", node.Name, "left", left)
					s.enqueueAfter(key, left)
					continue
				}
				s.backoff.next(bkey)
				msg := fmt.Sprintf("Found failed daemon pod %s/%s on node %s, will try to kill it", p.Namespace, p.Name, node.Name)
				controller.LoggerFrom(ctx).Info(msg)
				s.recorder.Event(ds, corev1.EventTypeWarning, ReasonFailedDaemonPod, msg)
				toDelete = append(toDelete, p)
			case corev1.PodSucceeded:
				// A daemon pod that exits is replaced too.
				toDelete = append(toDelete, p)
			default:
				running = append(running, p)
			}
		}
		if !allowsSurge(ds) {
			if len(running) > 1 {
				// Keep the oldest.
				toDelete = append(toDelete, running[1:]...)
			}
			return false, toDelete
		}
		// With surge, one old and one new pod may run side by side until the
		// new one is available; any more go.
		var oldestNew, oldestOld *corev1.Pod
		gen, _ := templateGeneration(ds)
		for _, p := range running {
			if isPodUpdated(p, hash, gen) {
				if oldestNew == nil {
					oldestNew = p
					continue
				}
			} else if oldestOld == nil {
				oldestOld = p
				continue
			}
			toDelete = append(toDelete, p)
		}
		if oldestNew != nil && oldestOld != nil && isPodAvailable(oldestNew, ds.Spec.MinReadySeconds, s.clock.Now()) {
			toDelete = append(toDelete, oldestOld)
		}
		return false, toDelete
	case len(pods) > 0:
		// The node no longer wants the pods: delete them.
		for _, p := range pods {
			if p.DeletionTimestamp == nil {
				toDelete = append(toDelete, p)
			}
		}
	}
	return false, toDelete
}

// syncNodes deletes toDelete and creates a pod for each node of needing,
// at most burstReplicas of each, recording the expectations first.
func (s *syncer) syncNodes(ctx context.Context, key string, ds *appsv1.DaemonSet, toDelete []*corev1.Pod, needing []string, hash string) error {
	if len(toDelete) > s.burstReplicas {
		toDelete = toDelete[:s.burstReplicas]
	}
	if len(needing) > s.burstReplicas {
		needing = needing[:s.burstReplicas]
	}
	if len(toDelete) == 0 && len(needing) == 0 {
		return nil
	}
	ids := make([]string, len(toDelete))
	for i, p := range toDelete {
		ids[i] = podKey(p)
	}
	// Expect before writing: the informer may deliver a change before the
	// call returns.
	s.expectations.ExpectDeletions(key, ids)
	s.expectations.RaiseExpectations(key, len(needing), 0)
	gen, err := templateGeneration(ds)
	if err != nil {
		gen = nil
	}
	template := podTemplate(ds, gen, hash)

	var (
		mu   sync.Mutex
		errs []error
	)
	if len(needing) > 0 {
		controller.LoggerFrom(ctx).Debug("creating daemon pods", "nodes", len(needing))
		next := 0
		created, err := slowStartBatch(len(needing), func() error {
			mu.Lock()
			node := needing[next]
			next++
			mu.Unlock()
			return s.createPod(ctx, ds, template, node)
		})
		if skipped := len(needing) - created; skipped > 0 {
			// The failed and untried creations will not be observed.
			s.expectations.LowerExpectations(key, skipped, 0)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	var wg sync.WaitGroup
	for _, pod := range toDelete {
		wg.Go(func() {
			if err := s.deletePod(ctx, ds, pod); err != nil {
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

// createPod creates ds's pod for node from template.
func (s *syncer) createPod(ctx context.Context, ds *appsv1.DaemonSet, template *corev1.PodTemplateSpec, node string) error {
	t := template.DeepCopy()
	t.Spec.Affinity = withNodeAffinity(t.Spec.Affinity, node)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       ds.Namespace,
			GenerateName:    podNamePrefix(ds.Name),
			Labels:          t.Labels,
			Annotations:     t.Annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, daemonSetKind)},
		},
		Spec: t.Spec,
	}
	created, err := s.pods.CreatePod(ctx, pod)
	if err != nil {
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil
		}
		s.recorder.Event(ds, corev1.EventTypeWarning, ReasonFailedCreate, fmt.Sprintf("Error creating: %v", err))
		return err
	}
	s.recorder.Event(ds, corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created pod: "+created.Name)
	return nil
}

// deletePod deletes pod if it is still the one chosen.
func (s *syncer) deletePod(ctx context.Context, ds *appsv1.DaemonSet, pod *corev1.Pod) error {
	err := s.pods.DeletePod(ctx, pod.Namespace, pod.Name, pod.UID)
	if err != nil {
		if !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			s.recorder.Event(ds, corev1.EventTypeWarning, ReasonFailedDelete, fmt.Sprintf("Error deleting: %v", err))
		}
		return err
	}
	s.recorder.Event(ds, corev1.EventTypeNormal, ReasonSuccessfulDelete, "Deleted pod: "+pod.Name)
	return nil
}

// updateStatus counts ds's pods over the nodes and writes the status,
// with observedGeneration when claimGeneration is set, unless nothing
// would change.
func (s *syncer) updateStatus(ctx context.Context, ds *appsv1.DaemonSet, nodes []*corev1.Node, hash string, claimGeneration bool) error {
	byNode, err := s.nodesToDaemonPods(ctx, ds)
	if err != nil {
		return fmt.Errorf("list daemon pods: %w", err)
	}
	gen, _ := templateGeneration(ds)
	now := s.clock.Now()
	var st appsv1.DaemonSetStatus
	for _, node := range nodes {
		shouldRun, _ := NodeShouldRunDaemonPod(node, ds)
		pods := byNode[node.Name]
		if !shouldRun {
			if len(pods) > 0 {
				st.NumberMisscheduled++
			}
			continue
		}
		st.DesiredNumberScheduled++
		if len(pods) == 0 {
			continue
		}
		st.CurrentNumberScheduled++
		pod := pods[0]
		if isPodReady(pod) {
			st.NumberReady++
			if isPodAvailable(pod, ds.Spec.MinReadySeconds, now) {
				st.NumberAvailable++
			}
		}
		if isPodUpdated(pod, hash, gen) {
			st.UpdatedNumberScheduled++
		}
	}
	st.NumberUnavailable = st.DesiredNumberScheduled - st.NumberAvailable
	if err := s.storeStatus(ctx, ds, st, claimGeneration); err != nil {
		return err
	}
	if ds.Spec.MinReadySeconds > 0 && st.NumberReady != st.NumberAvailable {
		s.enqueueAfter(keyOf(ds), time.Duration(ds.Spec.MinReadySeconds)*time.Second)
	}
	return nil
}

// storeStatus writes the counters of st into ds's status; a failed write
// is retried on a fresh read.
func (s *syncer) storeStatus(ctx context.Context, ds *appsv1.DaemonSet, st appsv1.DaemonSetStatus, claimGeneration bool) error {
	if countersEqual(ds.Status, st) && ds.Status.ObservedGeneration >= ds.Generation {
		return nil
	}
	next := ds.DeepCopy()
	for attempt := 0; ; attempt++ {
		if claimGeneration {
			next.Status.ObservedGeneration = ds.Generation
		}
		next.Status.DesiredNumberScheduled = st.DesiredNumberScheduled
		next.Status.CurrentNumberScheduled = st.CurrentNumberScheduled
		next.Status.NumberMisscheduled = st.NumberMisscheduled
		next.Status.NumberReady = st.NumberReady
		next.Status.UpdatedNumberScheduled = st.UpdatedNumberScheduled
		next.Status.NumberAvailable = st.NumberAvailable
		next.Status.NumberUnavailable = st.NumberUnavailable
		_, err := s.daemonSets.UpdateStatus(ctx, next)
		if err == nil {
			return nil
		}
		if attempt >= statusUpdateRetries {
			return fmt.Errorf("update status of %s/%s: %w", ds.Namespace, ds.Name, err)
		}
		fresh, gerr := s.daemonSets.GetDaemonSet(ctx, ds.Namespace, ds.Name)
		if gerr != nil {
			return fmt.Errorf("update status of %s/%s: %w", ds.Namespace, ds.Name, errors.Join(err, gerr))
		}
		if fresh.UID != ds.UID {
			return nil
		}
		next = fresh
	}
}

func countersEqual(a, b appsv1.DaemonSetStatus) bool {
	return a.DesiredNumberScheduled == b.DesiredNumberScheduled && a.CurrentNumberScheduled == b.CurrentNumberScheduled &&
		a.NumberMisscheduled == b.NumberMisscheduled && a.NumberReady == b.NumberReady &&
		a.UpdatedNumberScheduled == b.UpdatedNumberScheduled && a.NumberAvailable == b.NumberAvailable &&
		a.NumberUnavailable == b.NumberUnavailable
}

// slowStartBatch calls fn count times in parallel batches of 1, 2, 4 ...
// while every call of a batch succeeds. It returns how many succeeded and
// the first error.
func slowStartBatch(count int, fn func() error) (int, error) {
	remaining, successes := count, 0
	for batch := min(remaining, 1); batch > 0; batch = min(2*batch, remaining) {
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

// podNamePrefix is "<name>-", or the bare name where that would not be a
// valid generateName prefix.
func podNamePrefix(name string) string {
	prefix := name + "-"
	if len(validation.IsDNS1123Subdomain(prefix+"xxxxx")) != 0 {
		return name
	}
	return prefix
}

// compareDaemonPods orders the pods of one node: bound ones first, then
// oldest first, then by name.
func compareDaemonPods(a, b *corev1.Pod) int {
	if ba, bb := a.Spec.NodeName != "", b.Spec.NodeName != ""; ba != bb {
		if ba {
			return -1
		}
		return 1
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		if a.CreationTimestamp.Before(&b.CreationTimestamp) {
			return -1
		}
		return 1
	}
	return strings.Compare(a.Name, b.Name)
}

func isTerminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

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
	d := time.Duration(minReadySeconds) * time.Second
	return !c.LastTransitionTime.IsZero() && !c.LastTransitionTime.Add(d).After(now)
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}
