package statefulset

import (
	"context"
	"fmt"
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
	"k8s.io/utils/ptr"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/controller"
	"github.com/kplane/kplane/pkg/controller/history"
	"github.com/kplane/kplane/pkg/controller/record"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// fakeAPI records every write in order and, when live, applies it to the
// fixture's caches as an informer would deliver it (and meets the
// expectations the handlers would meet).
type fakeAPI struct {
	f       *fixture
	mu      sync.Mutex
	actions []string
	live    bool
	uids    int
	// failCreatePod fails pod creations with this error when set.
	failCreatePod error
}

func (a *fakeAPI) record(s string) {
	a.mu.Lock()
	a.actions = append(a.actions, s)
	a.mu.Unlock()
}

func (a *fakeAPI) uid(prefix string) types.UID {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.uids++
	return types.UID(fmt.Sprintf("%s-uid-%d", prefix, a.uids))
}

func (a *fakeAPI) CreatePod(_ context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	if a.failCreatePod != nil {
		a.record("create-failed pod " + pod.Name)
		return nil, a.failCreatePod
	}
	a.record("create pod " + pod.Name)
	out := pod.DeepCopy()
	out.UID = a.uid(pod.Name)
	out.Status.Phase = corev1.PodPending
	out.CreationTimestamp = metav1.NewTime(a.f.clock.Now())
	if a.live {
		a.f.mustAdd(a.f.podIdx, out)
		a.f.s.expectations.CreationObserved("ns/web")
	}
	return out, nil
}

func (a *fakeAPI) UpdatePod(_ context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	a.record("update pod " + pod.Name)
	if a.live {
		if err := a.f.podIdx.Update(pod.DeepCopy()); err != nil {
			return nil, err
		}
	}
	return pod.DeepCopy(), nil
}

func (a *fakeAPI) DeletePod(_ context.Context, namespace, name string, _ types.UID) error {
	a.record("delete pod " + name)
	if a.live {
		p, ok := a.f.podIdx.GetByKey(namespace + "/" + name)
		if ok {
			_ = a.f.podIdx.Delete(p)
		}
		a.f.s.expectations.DeletionObserved("ns/web")
	}
	return nil
}

func (a *fakeAPI) Patch(_ context.Context, _, name string, _ types.PatchType, data []byte) error {
	kind := "adopt"
	if strings.Contains(string(data), `"$patch":"delete"`) {
		kind = "release"
	}
	a.record(kind + " pod " + name)
	return nil
}

func (a *fakeAPI) CreateClaim(_ context.Context, pvc *corev1.PersistentVolumeClaim) (*corev1.PersistentVolumeClaim, error) {
	a.record("create pvc " + pvc.Name)
	out := pvc.DeepCopy()
	out.UID = a.uid(pvc.Name)
	if a.live {
		a.f.mustAdd(a.f.pvcIdx, out)
	}
	return out, nil
}

func (a *fakeAPI) UpdateClaim(_ context.Context, pvc *corev1.PersistentVolumeClaim) (*corev1.PersistentVolumeClaim, error) {
	var owners []string
	for _, r := range pvc.OwnerReferences {
		owners = append(owners, r.Kind+"/"+r.Name)
	}
	a.record(fmt.Sprintf("update pvc %s owners=%v", pvc.Name, owners))
	if a.live {
		if err := a.f.pvcIdx.Update(pvc.DeepCopy()); err != nil {
			return nil, err
		}
	}
	return pvc.DeepCopy(), nil
}

func (a *fakeAPI) GetStatefulSet(_ context.Context, namespace, name string) (*appsv1.StatefulSet, error) {
	set, ok := a.f.setIdx.GetByKey(namespace + "/" + name)
	if !ok {
		return nil, apierrors.NewNotFound(appsv1.Resource("statefulsets"), name)
	}
	return set.DeepCopy(), nil
}

func (a *fakeAPI) UpdateStatus(_ context.Context, set *appsv1.StatefulSet) (*appsv1.StatefulSet, error) {
	a.record("status")
	a.mu.Lock()
	a.f.statuses = append(a.f.statuses, *set.Status.DeepCopy())
	a.mu.Unlock()
	if a.live {
		if err := a.f.setIdx.Update(set.DeepCopy()); err != nil {
			return nil, err
		}
	}
	return set.DeepCopy(), nil
}

func (a *fakeAPI) CreateRevision(_ context.Context, rev *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	if _, ok := a.f.revIdx.GetByKey(rev.Namespace + "/" + rev.Name); ok {
		a.record("create-exists revision")
		return nil, apierrors.NewAlreadyExists(appsv1.Resource("controllerrevisions"), rev.Name)
	}
	a.record(fmt.Sprintf("create revision %d", rev.Revision))
	out := rev.DeepCopy()
	out.UID = a.uid("rev")
	out.CreationTimestamp = metav1.NewTime(a.f.clock.Now())
	if a.live {
		a.f.mustAdd(a.f.revIdx, out)
	}
	return out, nil
}

func (a *fakeAPI) GetRevision(_ context.Context, namespace, name string) (*appsv1.ControllerRevision, error) {
	r, ok := a.f.revIdx.GetByKey(namespace + "/" + name)
	if !ok {
		return nil, apierrors.NewNotFound(appsv1.Resource("controllerrevisions"), name)
	}
	return r.DeepCopy(), nil
}

func (a *fakeAPI) UpdateRevision(_ context.Context, rev *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	a.record(fmt.Sprintf("update revision %d", rev.Revision))
	if a.live {
		if err := a.f.revIdx.Update(rev.DeepCopy()); err != nil {
			return nil, err
		}
	}
	return rev.DeepCopy(), nil
}

func (a *fakeAPI) DeleteRevision(_ context.Context, namespace, name string, _ types.UID) error {
	r, ok := a.f.revIdx.GetByKey(namespace + "/" + name)
	if !ok {
		return apierrors.NewNotFound(appsv1.Resource("controllerrevisions"), name)
	}
	a.record(fmt.Sprintf("delete revision %d", r.Revision))
	if a.live {
		_ = a.f.revIdx.Delete(r)
	}
	return nil
}

func (a *fakeAPI) PatchRevision(_ context.Context, namespace, name string, _ types.PatchType, _ []byte) (*appsv1.ControllerRevision, error) {
	a.record("adopt revision " + name)
	return a.GetRevision(context.Background(), namespace, name)
}

// takeActions returns the writes since the last call, status writes left
// out.
func (a *fakeAPI) takeActions() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, s := range a.actions {
		if s != "status" {
			out = append(out, s)
		}
	}
	a.actions = nil
	return out
}

// fakeRecorder keeps events as "reason: message".
type fakeRecorder struct {
	mu     sync.Mutex
	events []string
}

func (r *fakeRecorder) Event(_ record.Object, _, reason, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, reason+": "+message)
}

type fixture struct {
	t        testing.TB
	s        *syncer
	api      *fakeAPI
	rec      *fakeRecorder
	setIdx   *cache.Indexer[*appsv1.StatefulSet]
	podIdx   *cache.Indexer[*corev1.Pod]
	pvcIdx   *cache.Indexer[*corev1.PersistentVolumeClaim]
	revIdx   *cache.Indexer[*appsv1.ControllerRevision]
	clock    *clocktesting.FakeClock
	statuses []appsv1.StatefulSetStatus
	requeued []string
}

func newIndexer[T cache.Object](t testing.TB) *cache.Indexer[T] {
	t.Helper()
	idx, err := cache.NewIndexer(cache.IndexerConfig[T]{})
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

func mustAddTo[T cache.Object](t testing.TB, idx *cache.Indexer[T], obj T) {
	t.Helper()
	if err := idx.Add(obj); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) mustAdd(idx any, obj any) {
	switch idx := idx.(type) {
	case *cache.Indexer[*corev1.Pod]:
		mustAddTo(f.t, idx, obj.(*corev1.Pod))
	case *cache.Indexer[*corev1.PersistentVolumeClaim]:
		mustAddTo(f.t, idx, obj.(*corev1.PersistentVolumeClaim))
	case *cache.Indexer[*appsv1.ControllerRevision]:
		mustAddTo(f.t, idx, obj.(*appsv1.ControllerRevision))
	}
}

// newFixture is a syncer over in-memory caches holding set and objs, with
// a live fake API.
func newFixture(t testing.TB, set *appsv1.StatefulSet, objs ...any) *fixture {
	t.Helper()
	f := &fixture{
		t: t, rec: &fakeRecorder{}, clock: clocktesting.NewFakeClock(t0),
		setIdx: newIndexer[*appsv1.StatefulSet](t), podIdx: newIndexer[*corev1.Pod](t),
		pvcIdx: newIndexer[*corev1.PersistentVolumeClaim](t), revIdx: newIndexer[*appsv1.ControllerRevision](t),
	}
	f.api = &fakeAPI{f: f, live: true}
	if err := controller.AddControllerUIDIndex(f.podIdx); err != nil {
		t.Fatal(err)
	}
	mustAddTo(t, f.setIdx, set)
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Pod:
			mustAddTo(t, f.podIdx, o)
		case *corev1.PersistentVolumeClaim:
			mustAddTo(t, f.pvcIdx, o)
		case *appsv1.ControllerRevision:
			mustAddTo(t, f.revIdx, o)
		default:
			t.Fatalf("unexpected object %T", o)
		}
	}
	exp, err := controller.NewExpectations(controller.ExpectationsConfig{Clock: f.clock})
	if err != nil {
		t.Fatal(err)
	}
	hist, err := history.New(history.Config{Lister: cache.NewLister(f.revIdx, appsv1.Resource("controllerrevisions")), Client: f.api})
	if err != nil {
		t.Fatal(err)
	}
	f.s = &syncer{
		setLister:      cache.NewLister(f.setIdx, appsv1.Resource("statefulsets")),
		podIndexer:     f.podIdx,
		pvcLister:      cache.NewLister(f.pvcIdx, corev1.Resource("persistentvolumeclaims")),
		history:        hist,
		api:            f.api,
		sets:           f.api,
		recorder:       f.rec,
		expectations:   exp,
		clock:          f.clock,
		enqueueAfter:   func(key string, d time.Duration) { f.requeued = append(f.requeued, fmt.Sprintf("%s after %v", key, d)) },
		maxUnavailable: true,
	}
	return f
}

func (f *fixture) sync() {
	f.t.Helper()
	if err := f.s.sync(f.t.Context(), "ns/web"); err != nil {
		f.t.Fatalf("sync: %v", err)
	}
}

// syncActions syncs and returns the writes it made.
func (f *fixture) syncActions() []string {
	f.t.Helper()
	f.api.takeActions()
	f.sync()
	return f.api.takeActions()
}

func (f *fixture) set() *appsv1.StatefulSet {
	f.t.Helper()
	set, ok := f.setIdx.GetByKey("ns/web")
	if !ok {
		f.t.Fatal("set ns/web not cached")
	}
	return set
}

// updateSet edits the cached set as a spec change would (generation +1).
func (f *fixture) updateSet(edit func(*appsv1.StatefulSet)) {
	f.t.Helper()
	set := f.set().DeepCopy()
	edit(set)
	set.Generation++
	if err := f.setIdx.Update(set); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) pod(name string) *corev1.Pod {
	f.t.Helper()
	p, ok := f.podIdx.GetByKey("ns/" + name)
	if !ok {
		f.t.Fatalf("pod %s not cached", name)
	}
	return p
}

// setPhase sets a cached pod's phase and readiness (ready since now).
func (f *fixture) setPhase(name string, phase corev1.PodPhase, ready bool) {
	f.t.Helper()
	p := f.pod(name).DeepCopy()
	p.Status.Phase = phase
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st, LastTransitionTime: metav1.NewTime(f.clock.Now())}}
	if err := f.podIdx.Update(p); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) readyAll() {
	f.t.Helper()
	for _, p := range f.podIdx.List() {
		if !isRunningAndReady(p) {
			f.setPhase(p.Name, corev1.PodRunning, true)
		}
	}
}

// settle syncs, readying every pod after each sync, until a sync makes no
// write other than status, and returns every write made.
func (f *fixture) settle() []string {
	f.t.Helper()
	var all []string
	for range 100 {
		acts := f.syncActions()
		f.readyAll()
		if len(acts) == 0 {
			return all
		}
		all = append(all, acts...)
	}
	f.t.Fatal("did not settle in 100 syncs")
	return nil
}

func (f *fixture) lastStatus() appsv1.StatefulSetStatus {
	f.t.Helper()
	if len(f.statuses) == 0 {
		f.t.Fatal("no status written")
	}
	return f.statuses[len(f.statuses)-1]
}

// newSet is a StatefulSet web in ns of replicas pods, defaulted as the API
// server defaults it.
func newSet(replicas int32) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "set-uid", Generation: 1},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            &replicas,
			ServiceName:         "web-svc",
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{
				Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{
					Partition: ptr.To[int32](0), MaxUnavailable: ptr.To(intstr.FromInt32(1)),
				},
			},
			RevisionHistoryLimit: ptr.To[int32](10),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1"}}},
			},
		},
	}
}

// withImage sets the template's image.
func withImage(image string) func(*appsv1.StatefulSet) {
	return func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = image }
}

func imageOf(p *corev1.Pod) string { return p.Spec.Containers[0].Image }
