package daemonset

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/controller"
	"github.com/kplane/kplane/pkg/controller/record"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const dsKey = "ns/agent"

// fixture is a syncer over in-memory caches and a fake API server that
// applies the sync's writes to those caches, as the informers would show
// them: created pods appear at once (unbound, as the controller makes
// them), deleted pods get a deletionTimestamp until finishDeletions.
type fixture struct {
	t      testing.TB
	s      *syncer
	clock  *clocktesting.FakeClock
	dsIdx  *cache.Indexer[*appsv1.DaemonSet]
	podIdx *cache.Indexer[*corev1.Pod]
	nodes  *cache.Indexer[*corev1.Node]
	revIdx *cache.Indexer[*appsv1.ControllerRevision]

	mu       sync.Mutex
	actions  []string
	events   []string
	requeued []time.Duration
	seq      int
	// hideCreates keeps created pods out of the cache, as an informer
	// that has not caught up.
	hideCreates bool
}

func newIndexer[T cache.Object](t testing.TB) *cache.Indexer[T] {
	t.Helper()
	x, err := cache.NewIndexer(cache.IndexerConfig[T]{})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func newFixture(t testing.TB, ds *appsv1.DaemonSet, nodes ...*corev1.Node) *fixture {
	t.Helper()
	clk := clocktesting.NewFakeClock(t0)
	f := &fixture{
		t: t, clock: clk,
		dsIdx: newIndexer[*appsv1.DaemonSet](t), podIdx: newIndexer[*corev1.Pod](t),
		nodes: newIndexer[*corev1.Node](t), revIdx: newIndexer[*appsv1.ControllerRevision](t),
	}
	if err := controller.AddControllerUIDIndex(f.podIdx); err != nil {
		t.Fatal(err)
	}
	exp, err := controller.NewUIDTrackingExpectations(controller.ExpectationsConfig{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	f.s = &syncer{
		dsLister:      cache.NewLister(f.dsIdx, appsv1.Resource("daemonsets")),
		podIndexer:    f.podIdx,
		nodeLister:    cache.NewLister(f.nodes, corev1.Resource("nodes")),
		revLister:     cache.NewLister(f.revIdx, appsv1.Resource("controllerrevisions")),
		pods:          f,
		daemonSets:    f,
		revisions:     f,
		recorder:      f,
		expectations:  exp,
		clock:         clk,
		backoff:       newBackoff(clk),
		enqueueAfter:  func(_ string, d time.Duration) { f.mu.Lock(); f.requeued = append(f.requeued, d); f.mu.Unlock() },
		burstReplicas: DefaultBurstReplicas,
	}
	f.put(ds)
	for _, n := range nodes {
		if err := f.nodes.Add(n); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func (f *fixture) put(ds *appsv1.DaemonSet) {
	f.t.Helper()
	if err := f.dsIdx.Update(ds); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) ds() *appsv1.DaemonSet {
	f.t.Helper()
	ds, ok := f.dsIdx.GetByKey(dsKey)
	if !ok {
		f.t.Fatal("daemon set gone")
	}
	return ds
}

func (f *fixture) record(a string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.actions = append(f.actions, a)
}

// take returns the actions since the last take, status writes left out.
func (f *fixture) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := slices.DeleteFunc(f.actions, func(a string) bool { return a == "status" })
	f.actions = nil
	slices.Sort(out)
	return out
}

func (f *fixture) sync() {
	f.t.Helper()
	ctx := controller.WithLogger(f.t.Context(), slog.New(slog.DiscardHandler))
	if err := f.s.sync(ctx, dsKey); err != nil {
		f.t.Fatalf("sync: %v", err)
	}
}

// Event implements EventRecorder.
func (f *fixture) Event(_ record.Object, _, reason, _ string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, reason)
}

func (f *fixture) CreatePod(_ context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	node, err := targetNodeName(pod)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	f.mu.Lock()
	f.seq++
	out := pod.DeepCopy()
	out.Name = fmt.Sprintf("%s%d", pod.GenerateName, f.seq)
	out.UID = types.UID("uid-" + out.Name)
	out.CreationTimestamp = metav1.NewTime(f.clock.Now().Add(time.Duration(f.seq) * time.Millisecond))
	hide := f.hideCreates
	f.actions = append(f.actions, "create "+node)
	f.mu.Unlock()
	if !hide {
		if err := f.podIdx.Add(out); err != nil {
			return nil, err
		}
		f.s.expectations.CreationObserved(dsKey)
	}
	return out, nil
}

func (f *fixture) DeletePod(_ context.Context, namespace, name string, _ types.UID) error {
	f.record("delete " + name)
	p, ok := f.podIdx.GetByKey(namespace + "/" + name)
	if !ok {
		return apierrors.NewNotFound(corev1.Resource("pods"), name)
	}
	p = p.DeepCopy()
	now := metav1.NewTime(f.clock.Now())
	p.DeletionTimestamp = &now
	if err := f.podIdx.Update(p); err != nil {
		return err
	}
	f.s.expectations.DeletionObserved(dsKey, namespace+"/"+name)
	return nil
}

func (f *fixture) Patch(_ context.Context, _, name string, _ types.PatchType, data []byte) error {
	kind := "adopt"
	if strings.Contains(string(data), `"$patch":"delete"`) {
		kind = "release"
	} else if strings.Contains(string(data), "labels") {
		kind = "relabel"
	}
	f.record(kind + " " + name)
	return nil
}

func (f *fixture) GetDaemonSet(context.Context, string, string) (*appsv1.DaemonSet, error) {
	return f.ds().DeepCopy(), nil
}

func (f *fixture) UpdateStatus(_ context.Context, ds *appsv1.DaemonSet) (*appsv1.DaemonSet, error) {
	f.record("status")
	f.put(ds.DeepCopy())
	return ds, nil
}

func (f *fixture) CreateRevision(_ context.Context, rev *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	if _, ok := f.revIdx.GetByKey(rev.Namespace + "/" + rev.Name); ok {
		return nil, apierrors.NewAlreadyExists(appsv1.Resource("controllerrevisions"), rev.Name)
	}
	f.record(fmt.Sprintf("create revision %d", rev.Revision))
	out := rev.DeepCopy()
	out.UID = types.UID("uid-" + rev.Name)
	out.CreationTimestamp = metav1.NewTime(f.clock.Now())
	return out, f.revIdx.Add(out)
}

func (f *fixture) GetRevision(_ context.Context, namespace, name string) (*appsv1.ControllerRevision, error) {
	rev, ok := f.revIdx.GetByKey(namespace + "/" + name)
	if !ok {
		return nil, apierrors.NewNotFound(appsv1.Resource("controllerrevisions"), name)
	}
	return rev.DeepCopy(), nil
}

func (f *fixture) UpdateRevision(_ context.Context, rev *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	f.record(fmt.Sprintf("update revision %s to %d", rev.Name, rev.Revision))
	return rev, f.revIdx.Update(rev.DeepCopy())
}

func (f *fixture) DeleteRevision(_ context.Context, namespace, name string) error {
	f.record("delete revision " + name)
	f.revIdx.DeleteKey(namespace + "/" + name)
	return nil
}

func (f *fixture) PatchRevision(_ context.Context, _, name string, _ types.PatchType, _ []byte) error {
	f.record("patch revision " + name)
	return nil
}

// pods returns the daemon pods in the cache, by name.
func (f *fixture) pods() []*corev1.Pod {
	ps := f.podIdx.List()
	slices.SortFunc(ps, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return ps
}

// runPods binds every pod to its target node and makes it ready now, as
// the scheduler and kubelet would.
func (f *fixture) runPods() {
	f.t.Helper()
	for _, p := range f.pods() {
		if p.DeletionTimestamp != nil || isTerminal(p) || isPodReady(p) {
			continue
		}
		node, err := targetNodeName(p)
		if err != nil {
			f.t.Fatal(err)
		}
		next := p.DeepCopy()
		next.Spec.NodeName = node
		next.Status.Phase = corev1.PodRunning
		next.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(f.clock.Now())}}
		if err := f.podIdx.Update(next); err != nil {
			f.t.Fatal(err)
		}
	}
}

// finishDeletions removes the pods being deleted.
func (f *fixture) finishDeletions() {
	for _, p := range f.pods() {
		if p.DeletionTimestamp != nil {
			f.podIdx.DeleteKey(p.Namespace + "/" + p.Name)
		}
	}
}

// setPhase sets the phase of the pod named name.
func (f *fixture) setPhase(name string, phase corev1.PodPhase) {
	f.t.Helper()
	p, ok := f.podIdx.GetByKey("ns/" + name)
	if !ok {
		f.t.Fatalf("no pod %s", name)
	}
	p = p.DeepCopy()
	p.Status.Phase = phase
	p.Status.Conditions = nil
	if err := f.podIdx.Update(p); err != nil {
		f.t.Fatal(err)
	}
}

// changeTemplate edits the template as an update through the API server
// would: generation and template generation one more.
func (f *fixture) changeTemplate(image string) {
	f.t.Helper()
	ds := f.ds().DeepCopy()
	ds.Spec.Template.Spec.Containers[0].Image = image
	ds.Generation++
	gen, _ := templateGeneration(ds)
	ds.Annotations[appsv1.DeprecatedTemplateGeneration] = fmt.Sprint(*gen + 1)
	f.put(ds)
}

// podsOnNodes counts the live pods per target node, and how many of them
// run image.
func (f *fixture) podsOnNodes(image string) (live map[string]int, updated int) {
	live = map[string]int{}
	for _, p := range f.pods() {
		if p.DeletionTimestamp != nil {
			continue
		}
		node, _ := targetNodeName(p)
		live[node]++
		if p.Spec.Containers[0].Image == image {
			updated++
		}
	}
	return live, updated
}

func newDS(edit func(*appsv1.DaemonSet)) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: "agent", UID: "ds-uid", Generation: 1,
			Annotations: map[string]string{appsv1.DeprecatedTemplateGeneration: "1"},
		},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "agent:1"}}},
			},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{
				Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{
					MaxUnavailable: ptrTo(intstr.FromInt32(1)), MaxSurge: ptrTo(intstr.FromInt32(0)),
				},
			},
			RevisionHistoryLimit: ptrTo[int32](10),
		},
	}
	if edit != nil {
		edit(ds)
	}
	return ds
}

func newNode(name string, edit func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}}}
	if edit != nil {
		edit(n)
	}
	return n
}

func ptrTo[T any](v T) *T { return &v }
