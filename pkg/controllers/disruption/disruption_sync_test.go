package disruption

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/controller/record"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type fakeWriter struct {
	written []*policyv1.PodDisruptionBudget
}

func (f *fakeWriter) UpdateStatus(_ context.Context, pdb *policyv1.PodDisruptionBudget) error {
	f.written = append(f.written, pdb)
	return nil
}

// fakeScales serves the scale subresource of custom controllers.
type fakeScales map[string]int32 // "group/Kind/name" -> replicas; uid "<name>-uid"

func (f fakeScales) Scale(_ context.Context, gk schema.GroupKind, _, name string) (types.UID, int32, error) {
	n, ok := f[gk.Group+"/"+gk.Kind+"/"+name]
	if !ok {
		return "", 0, apierrors.NewNotFound(schema.GroupResource{Group: gk.Group, Resource: "things"}, name)
	}
	if n < 0 {
		return "", 0, errors.New("scale unavailable")
	}
	return types.UID(name + "-uid"), n, nil
}

type fakeRecorder struct{ reasons []string }

func (r *fakeRecorder) Event(_ record.Object, _, reason, _ string) {
	r.reasons = append(r.reasons, reason)
}

type fixture struct {
	s        *syncer
	w        *fakeWriter
	rec      *fakeRecorder
	clock    *clocktesting.FakeClock
	requeues []string
}

func indexer[T cache.Object](t *testing.T, objs []T) *cache.Indexer[T] {
	t.Helper()
	x, err := cache.NewIndexer(cache.IndexerConfig[T]{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if err := x.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	return x
}

// world is the objects a sync sees.
type world struct {
	pods  []*corev1.Pod
	rss   []*appsv1.ReplicaSet
	ds    []*appsv1.Deployment
	sss   []*appsv1.StatefulSet
	rcs   []*corev1.ReplicationController
	scale fakeScales
}

func newFixture(t *testing.T, pdb *policyv1.PodDisruptionBudget, w world) *fixture {
	t.Helper()
	f := &fixture{w: &fakeWriter{}, rec: &fakeRecorder{}, clock: clocktesting.NewFakeClock(t0)}
	f.s = &syncer{
		pdbLister:        cache.NewLister(indexer(t, []*policyv1.PodDisruptionBudget{pdb}), policyv1.Resource("poddisruptionbudgets")),
		podLister:        cache.NewLister(indexer(t, w.pods), corev1.Resource("pods")),
		rsLister:         cache.NewLister(indexer(t, w.rss), appsv1.Resource("replicasets")),
		deploymentLister: cache.NewLister(indexer(t, w.ds), appsv1.Resource("deployments")),
		ssLister:         cache.NewLister(indexer(t, w.sss), appsv1.Resource("statefulsets")),
		rcLister:         cache.NewLister(indexer(t, w.rcs), corev1.Resource("replicationcontrollers")),
		scales:           w.scale,
		pdbs:             f.w,
		recorder:         f.rec,
		clock:            f.clock,
		enqueueAfter: func(key string, d time.Duration) {
			f.requeues = append(f.requeues, fmt.Sprintf("%s after %v", key, d))
		},
	}
	return f
}

func newPDB(edit func(*policyv1.PodDisruptionBudget)) *policyv1.PodDisruptionBudget {
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Generation: 3},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}
	edit(pdb)
	return pdb
}

func minAvailable(v intstr.IntOrString) func(*policyv1.PodDisruptionBudget) {
	return func(p *policyv1.PodDisruptionBudget) { p.Spec.MinAvailable = &v }
}

func maxUnavailable(v intstr.IntOrString) func(*policyv1.PodDisruptionBudget) {
	return func(p *policyv1.PodDisruptionBudget) { p.Spec.MaxUnavailable = &v }
}

// pod is a pod labelled app=web, ready unless notReady, controlled by
// owner when it is not nil.
func pod(name string, ready bool, owner metav1.Object, kind schema.GroupVersionKind) *corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name + "-uid"), Labels: map[string]string{"app": "web"}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}},
	}
	if owner != nil {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: kind.GroupVersion().String(), Kind: kind.Kind, Name: owner.GetName(), UID: owner.GetUID(), Controller: ptr.To(true)}}
	}
	return p
}

var (
	gvkRS  = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	gvkSS  = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
	gvkRC  = corev1.SchemeGroupVersion.WithKind("ReplicationController")
	gvkFoo = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Foo"}
)

func meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name + "-uid")}
}

func deploymentWorld(replicas int32, ready ...bool) world {
	d := &appsv1.Deployment{ObjectMeta: meta("d"), Spec: appsv1.DeploymentSpec{Replicas: &replicas}}
	old := &appsv1.ReplicaSet{ObjectMeta: meta("d-old"), Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](1)}}
	cur := &appsv1.ReplicaSet{ObjectMeta: meta("d-new"), Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](replicas - 1)}}
	for _, rs := range []*appsv1.ReplicaSet{old, cur} {
		rs.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "d", UID: "d-uid", Controller: ptr.To(true)}}
	}
	w := world{ds: []*appsv1.Deployment{d}, rss: []*appsv1.ReplicaSet{old, cur}}
	for i, r := range ready {
		rs := cur
		if i == 0 {
			rs = old
		}
		w.pods = append(w.pods, pod(fmt.Sprintf("p%d", i), r, rs, gvkRS))
	}
	return w
}

// st is the status fields a test checks.
type st struct {
	Expected, Desired, Healthy, Allowed int32
	Reason                              string
	Disrupted                           []string
}

func summary(pdb *policyv1.PodDisruptionBudget) st {
	s := st{
		Expected: pdb.Status.ExpectedPods, Desired: pdb.Status.DesiredHealthy,
		Healthy: pdb.Status.CurrentHealthy, Allowed: pdb.Status.DisruptionsAllowed,
	}
	for _, c := range pdb.Status.Conditions {
		if c.Type == policyv1.DisruptionAllowedCondition {
			s.Reason = string(c.Status) + "/" + c.Reason
		}
	}
	for name := range pdb.Status.DisruptedPods {
		s.Disrupted = append(s.Disrupted, name)
	}
	return s
}

func TestSyncStatus(t *testing.T) {
	unmanaged := func(name string, ready bool) *corev1.Pod { return pod(name, ready, nil, schema.GroupVersionKind{}) }
	ss := &appsv1.StatefulSet{ObjectMeta: meta("ss"), Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](4)}}
	rc := &corev1.ReplicationController{ObjectMeta: meta("rc"), Spec: corev1.ReplicationControllerSpec{Replicas: ptr.To[int32](2)}}
	foo := &metav1.ObjectMeta{Namespace: "ns", Name: "foo", UID: "foo-uid"}
	terminating := pod("gone", true, nil, schema.GroupVersionKind{})
	terminating.DeletionTimestamp = &metav1.Time{Time: t0}
	tests := []struct {
		name   string
		edit   func(*policyv1.PodDisruptionBudget)
		world  world
		want   st
		events []string
	}{{
		name:  "integer minAvailable expects the covered pods and counts ready ones",
		edit:  minAvailable(intstr.FromInt32(2)),
		world: world{pods: []*corev1.Pod{unmanaged("a", true), unmanaged("b", true), unmanaged("c", true), unmanaged("d", false)}},
		want:  st{Expected: 4, Desired: 2, Healthy: 3, Allowed: 1, Reason: "True/SufficientPods"},
	}, {
		name:  "pods being deleted are not healthy",
		edit:  minAvailable(intstr.FromInt32(1)),
		world: world{pods: []*corev1.Pod{unmanaged("a", true), terminating}},
		want:  st{Expected: 2, Desired: 1, Healthy: 1, Allowed: 0, Reason: "False/InsufficientPods"},
	}, {
		name: "pods the selector does not match are not covered",
		edit: minAvailable(intstr.FromInt32(1)),
		world: world{pods: []*corev1.Pod{unmanaged("a", true), func() *corev1.Pod {
			p := unmanaged("other", true)
			p.Labels = map[string]string{"app": "db"}
			return p
		}()}},
		want: st{Expected: 1, Desired: 1, Healthy: 1, Reason: "False/InsufficientPods"},
	}, {
		name:   "no pods allows no disruption",
		edit:   minAvailable(intstr.FromInt32(0)),
		want:   st{Reason: "False/InsufficientPods"},
		events: []string{ReasonNoPods},
	}, {
		name:  "percentage minAvailable expects the Deployment's replicas through its ReplicaSets, rounding up",
		edit:  minAvailable(intstr.FromString("50%")),
		world: deploymentWorld(5, true, true, true, true),
		want:  st{Expected: 5, Desired: 3, Healthy: 4, Allowed: 1, Reason: "True/SufficientPods"},
	}, {
		name:  "maxUnavailable subtracts from the Deployment's replicas",
		edit:  maxUnavailable(intstr.FromInt32(1)),
		world: deploymentWorld(3, true, true, false),
		want:  st{Expected: 3, Desired: 2, Healthy: 2, Allowed: 0, Reason: "False/InsufficientPods"},
	}, {
		name:  "maxUnavailable percentage of a StatefulSet",
		edit:  maxUnavailable(intstr.FromString("25%")),
		world: world{sss: []*appsv1.StatefulSet{ss}, pods: []*corev1.Pod{pod("ss-0", true, ss, gvkSS), pod("ss-1", true, ss, gvkSS), pod("ss-2", true, ss, gvkSS), pod("ss-3", true, ss, gvkSS)}},
		want:  st{Expected: 4, Desired: 3, Healthy: 4, Allowed: 1, Reason: "True/SufficientPods"},
	}, {
		name:  "maxUnavailable of a ReplicationController",
		edit:  maxUnavailable(intstr.FromInt32(1)),
		world: world{rcs: []*corev1.ReplicationController{rc}, pods: []*corev1.Pod{pod("rc-a", true, rc, gvkRC), pod("rc-b", true, rc, gvkRC)}},
		want:  st{Expected: 2, Desired: 1, Healthy: 2, Allowed: 1, Reason: "True/SufficientPods"},
	}, {
		name:  "custom controllers are scaled through the scale subresource",
		edit:  maxUnavailable(intstr.FromInt32(0)),
		world: world{scale: fakeScales{"example.com/Foo/foo": 3}, pods: []*corev1.Pod{pod("foo-a", true, foo, gvkFoo), pod("foo-b", true, foo, gvkFoo), pod("foo-c", true, foo, gvkFoo)}},
		want:  st{Expected: 3, Desired: 3, Healthy: 3, Allowed: 0, Reason: "False/InsufficientPods"},
	}, {
		name:   "unmanaged pods are left out of the expected scale",
		edit:   maxUnavailable(intstr.FromInt32(1)),
		world:  world{rcs: []*corev1.ReplicationController{rc}, pods: []*corev1.Pod{pod("rc-a", true, rc, gvkRC), pod("rc-b", true, rc, gvkRC), unmanaged("loose", true)}},
		want:   st{Expected: 2, Desired: 1, Healthy: 3, Allowed: 2, Reason: "True/SufficientPods"},
		events: []string{ReasonUnmanagedPods},
	}, {
		name:   "a pod whose controller is not found fails safe",
		edit:   maxUnavailable(intstr.FromInt32(1)),
		world:  world{pods: []*corev1.Pod{pod("rc-a", true, rc, gvkRC)}},
		want:   st{Reason: "False/SyncFailed"},
		events: []string{ReasonCalculateExpectedPodCountFailed},
	}, {
		name:   "a controller with another uid is not the pod's controller",
		edit:   minAvailable(intstr.FromString("100%")),
		world:  world{rcs: []*corev1.ReplicationController{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rc", UID: "new-uid"}}}, pods: []*corev1.Pod{pod("rc-a", true, rc, gvkRC)}},
		want:   st{Reason: "False/SyncFailed"},
		events: []string{ReasonCalculateExpectedPodCountFailed},
	}, {
		name:   "an unreadable scale fails safe",
		edit:   maxUnavailable(intstr.FromInt32(1)),
		world:  world{scale: fakeScales{"example.com/Foo/foo": -1}, pods: []*corev1.Pod{pod("foo-a", true, foo, gvkFoo)}},
		want:   st{Reason: "False/SyncFailed"},
		events: []string{ReasonCalculateExpectedPodCountFailed},
	}, {
		name: "unhealthyPodEvictionPolicy does not change the status",
		edit: func(p *policyv1.PodDisruptionBudget) {
			minAvailable(intstr.FromInt32(1))(p)
			p.Spec.UnhealthyPodEvictionPolicy = ptr.To(policyv1.AlwaysAllow)
		},
		world: world{pods: []*corev1.Pod{unmanaged("a", true), unmanaged("b", false)}},
		want:  st{Expected: 2, Desired: 1, Healthy: 1, Reason: "False/InsufficientPods"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, newPDB(tt.edit), tt.world)
			if err := f.s.sync(t.Context(), "ns/web"); err != nil {
				t.Fatalf("sync: %v", err)
			}
			if len(f.w.written) != 1 {
				t.Fatalf("wrote status %d times, want once", len(f.w.written))
			}
			got := f.w.written[0]
			if diff := cmp.Diff(tt.want, summary(got)); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.events, f.rec.reasons); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if tt.want.Reason != "False/SyncFailed" && got.Status.ObservedGeneration != 3 {
				t.Errorf("observedGeneration = %d, want 3", got.Status.ObservedGeneration)
			}
		})
	}
}

func TestSyncDisruptedPodsArePrunedAfterTheDeletionTimeout(t *testing.T) {
	pods := []*corev1.Pod{
		pod("fresh", true, nil, schema.GroupVersionKind{}),
		pod("stale", true, nil, schema.GroupVersionKind{}),
		pod("deleting", true, nil, schema.GroupVersionKind{}),
		pod("healthy", true, nil, schema.GroupVersionKind{}),
	}
	pods[2].DeletionTimestamp = &metav1.Time{Time: t0}
	pdb := newPDB(minAvailable(intstr.FromInt32(1)))
	pdb.Status.DisruptedPods = map[string]metav1.Time{
		"fresh":    metav1.NewTime(t0.Add(-30 * time.Second)),
		"stale":    metav1.NewTime(t0.Add(-DeletionTimeout - time.Second)),
		"deleting": metav1.NewTime(t0),
		"missing":  metav1.NewTime(t0),
	}
	f := newFixture(t, pdb, world{pods: pods})
	if err := f.s.sync(t.Context(), "ns/web"); err != nil {
		t.Fatal(err)
	}
	want := st{Expected: 4, Desired: 1, Healthy: 2, Allowed: 1, Reason: "True/SufficientPods", Disrupted: []string{"fresh"}}
	if diff := cmp.Diff(want, summary(f.w.written[0])); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ns/web after 1m30s"}, f.requeues); diff != "" {
		t.Errorf("requeues (-want +got):\n%s", diff)
	}
}

func TestSyncWritesNothingWhenUpToDate(t *testing.T) {
	pods := []*corev1.Pod{pod("a", true, nil, schema.GroupVersionKind{}), pod("b", true, nil, schema.GroupVersionKind{})}
	f := newFixture(t, newPDB(minAvailable(intstr.FromInt32(1))), world{pods: pods})
	if err := f.s.sync(t.Context(), "ns/web"); err != nil {
		t.Fatal(err)
	}
	written := f.w.written[0]
	f2 := newFixture(t, written, world{pods: pods})
	if err := f2.s.sync(t.Context(), "ns/web"); err != nil {
		t.Fatal(err)
	}
	if len(f2.w.written) != 0 {
		t.Errorf("rewrote an up-to-date status: %+v", f2.w.written[0].Status)
	}
	// A new generation is observed.
	bumped := written.DeepCopy()
	bumped.Generation++
	f3 := newFixture(t, bumped, world{pods: pods})
	if err := f3.s.sync(t.Context(), "ns/web"); err != nil {
		t.Fatal(err)
	}
	if len(f3.w.written) != 1 || f3.w.written[0].Status.ObservedGeneration != bumped.Generation {
		t.Errorf("new generation not observed: %d writes", len(f3.w.written))
	}
}

func TestSyncDeletedBudgetDoesNothing(t *testing.T) {
	f := newFixture(t, newPDB(minAvailable(intstr.FromInt32(1))), world{})
	if err := f.s.sync(t.Context(), "ns/other"); err != nil || len(f.w.written) != 0 {
		t.Errorf("sync of a missing budget: err %v, %d writes", err, len(f.w.written))
	}
}
