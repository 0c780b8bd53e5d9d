package replicaset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/controller"
	"github.com/kplane/kplane/pkg/controller/record"
)

// fakeAPI records every write the sync makes, in order, and fails the ones
// a test asks it to.
type fakeAPI struct {
	mu      sync.Mutex
	actions []string
	// failCreateAfter, when >= 0, fails every create after that many
	// successful ones.
	failCreateAfter int
	creates         int
	rs              *appsv1.ReplicaSet // what GetReplicaSet returns
	statuses        []appsv1.ReplicaSetStatus
}

func newFakeAPI(rs *appsv1.ReplicaSet) *fakeAPI { return &fakeAPI{failCreateAfter: -1, rs: rs} }

func (f *fakeAPI) record(a string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.actions = append(f.actions, a)
}

func (f *fakeAPI) CreatePod(_ context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failCreateAfter >= 0 && f.creates >= f.failCreateAfter {
		f.actions = append(f.actions, "create-failed")
		return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("quota exceeded"))
	}
	f.creates++
	f.actions = append(f.actions, "create")
	out := pod.DeepCopy()
	out.Name = fmt.Sprintf("%sp%d", pod.GenerateName, f.creates)
	return out, nil
}

func (f *fakeAPI) DeletePod(_ context.Context, namespace, name string, _ types.UID) error {
	f.record("delete " + namespace + "/" + name)
	return nil
}

func (f *fakeAPI) Patch(_ context.Context, namespace, name string, _ types.PatchType, data []byte) error {
	kind := "adopt"
	if strings.Contains(string(data), `"$patch":"delete"`) {
		kind = "release"
	}
	f.record(kind + " " + namespace + "/" + name)
	return nil
}

func (f *fakeAPI) GetReplicaSet(context.Context, string, string) (*appsv1.ReplicaSet, error) {
	return f.rs, nil
}

func (f *fakeAPI) UpdateStatus(_ context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.actions = append(f.actions, "status")
	f.statuses = append(f.statuses, rs.Status)
	return rs.DeepCopy(), nil
}

func (f *fakeAPI) count(prefix string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, a := range f.actions {
		if strings.HasPrefix(a, prefix) {
			n++
		}
	}
	return n
}

// fakeRecorder keeps event reasons.
type fakeRecorder struct {
	mu      sync.Mutex
	reasons []string
}

func (r *fakeRecorder) Event(_ record.Object, _, reason, _ string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reasons = append(r.reasons, reason)
}

func (r *fakeRecorder) count(reason string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, x := range r.reasons {
		if x == reason {
			n++
		}
	}
	return n
}

// fixture is a syncer over in-memory listers and a fakeAPI.
type fixture struct {
	t        testing.TB
	s        *syncer
	api      *fakeAPI
	rec      *fakeRecorder
	rsIdx    *cache.Indexer[*appsv1.ReplicaSet]
	podIdx   *cache.Indexer[*corev1.Pod]
	clock    *clocktesting.FakeClock
	requeued []string
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newFixture(t testing.TB, rs *appsv1.ReplicaSet, pods ...*corev1.Pod) *fixture {
	t.Helper()
	rsIdx, err := cache.NewIndexer(cache.IndexerConfig[*appsv1.ReplicaSet]{})
	if err != nil {
		t.Fatal(err)
	}
	podIdx, err := cache.NewIndexer(cache.IndexerConfig[*corev1.Pod]{})
	if err != nil {
		t.Fatal(err)
	}
	if err := controller.AddControllerUIDIndex(podIdx); err != nil {
		t.Fatal(err)
	}
	if err := rsIdx.Add(rs); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if err := podIdx.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	clk := clocktesting.NewFakeClock(t0)
	exp, err := controller.NewUIDTrackingExpectations(controller.ExpectationsConfig{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, api: newFakeAPI(rs), rec: &fakeRecorder{}, rsIdx: rsIdx, podIdx: podIdx, clock: clk}
	f.s = &syncer{
		rsLister:      cache.NewLister(rsIdx, appsv1.Resource("replicasets")),
		podLister:     cache.NewLister(podIdx, corev1.Resource("pods")),
		podIndexer:    podIdx,
		pods:          f.api,
		replicaSets:   f.api,
		recorder:      f.rec,
		expectations:  exp,
		clock:         clk,
		enqueueAfter:  func(key string, d time.Duration) { f.requeued = append(f.requeued, fmt.Sprintf("%s after %v", key, d)) },
		burstReplicas: DefaultBurstReplicas,
	}
	return f
}

func (f *fixture) sync() error {
	f.t.Helper()
	return f.s.sync(f.t.Context(), "ns/web")
}

func newRS(replicas int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "rs-uid", Generation: 2},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "front"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
			},
		},
	}
}

// podOf is a pod rs controls, named name, in phase Running and ready since
// readySince unless that is zero.
func podOf(rs *appsv1.ReplicaSet, name string, readySince time.Time) *corev1.Pod {
	yes := true
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: name, UID: types.UID("uid-" + name),
			Labels:            map[string]string{"app": "web", "tier": "front"},
			CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour)),
		},
		Spec:   corev1.PodSpec{NodeName: "n1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if rs != nil {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &yes}}
	}
	if !readySince.IsZero() {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(readySince)}}
	}
	return p
}

func TestSyncCreatesInSlowStartBatches(t *testing.T) {
	rs := newRS(10)
	f := newFixture(t, rs)
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if got := f.api.count("create"); got != 10 {
		t.Fatalf("creates = %d, want 10", got)
	}
	if got := f.rec.count(ReasonSuccessfulCreate); got != 10 {
		t.Errorf("SuccessfulCreate events = %d, want 10", got)
	}
	if add, _, _ := f.s.expectations.GetExpectations("ns/web"); add != 10 {
		t.Errorf("expected creations = %d, want 10", add)
	}
	// Until the informer sees the pods, a second sync creates nothing.
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if got := f.api.count("create"); got != 10 {
		t.Errorf("creates after a second sync = %d, want still 10", got)
	}
}

func TestSyncStopsAtFirstFailedBatch(t *testing.T) {
	rs := newRS(10)
	f := newFixture(t, rs)
	// Batches 1, 2, 4: the third batch has 4 calls; let 4 succeed in total,
	// so the third batch fails partly and no fourth batch runs.
	f.api.failCreateAfter = 4
	err := f.sync()
	if !apierrors.IsForbidden(err) {
		t.Fatalf("sync = %v, want the Forbidden create error", err)
	}
	if got, want := f.api.count("create"), 7; got != want {
		t.Errorf("create calls = %d, want %d (batches 1+2+4)", got, want)
	}
	if got := f.api.count("create-failed"); got != 3 {
		t.Errorf("failed creates = %d, want 3", got)
	}
	if got := f.rec.count(ReasonFailedCreate); got != 3 {
		t.Errorf("FailedCreate events = %d, want 3", got)
	}
	// Only the 4 successes are awaited.
	if add, _, _ := f.s.expectations.GetExpectations("ns/web"); add != 4 {
		t.Errorf("expected creations = %d, want 4", add)
	}
	if len(f.api.statuses) != 1 {
		t.Fatalf("status writes = %d, want 1", len(f.api.statuses))
	}
	conds := f.api.statuses[0].Conditions
	if len(conds) != 1 || conds[0].Type != appsv1.ReplicaSetReplicaFailure || conds[0].Reason != ReasonFailedCreate {
		t.Errorf("conditions = %+v, want one ReplicaFailure/FailedCreate", conds)
	}
}

func TestSyncDeletesSurplusByRank(t *testing.T) {
	rs := newRS(2)
	old := podOf(rs, "old", t0.Add(-time.Hour))
	young := podOf(rs, "young", t0.Add(-time.Minute))
	unready := podOf(rs, "unready", time.Time{})
	pending := podOf(rs, "pending", time.Time{})
	pending.Status.Phase = corev1.PodPending
	f := newFixture(t, rs, old, young, unready, pending)
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	var deletes []string
	for _, a := range f.api.actions {
		if strings.HasPrefix(a, "delete ") {
			deletes = append(deletes, strings.TrimPrefix(a, "delete "))
		}
	}
	slices.Sort(deletes)
	if diff := cmp.Diff([]string{"ns/pending", "ns/unready"}, deletes); diff != "" {
		t.Errorf("deleted (-want +got):\n%s", diff)
	}
	if got := f.rec.count(ReasonSuccessfulDelete); got != 2 {
		t.Errorf("SuccessfulDelete events = %d, want 2", got)
	}
	if f.s.expectations.SatisfiedExpectations("ns/web") {
		t.Error("expectations satisfied before the deletions were observed")
	}
	f.s.expectations.DeletionObserved("ns/web", "ns/pending")
	f.s.expectations.DeletionObserved("ns/web", "ns/unready")
	if !f.s.expectations.SatisfiedExpectations("ns/web") {
		t.Error("expectations not satisfied after both deletions were observed")
	}
}

func TestSyncIgnoresInactivePods(t *testing.T) {
	rs := newRS(2)
	done := podOf(rs, "done", time.Time{})
	done.Status.Phase = corev1.PodSucceeded
	failed := podOf(rs, "failed", time.Time{})
	failed.Status.Phase = corev1.PodFailed
	deleting := podOf(rs, "deleting", t0)
	now := metav1.NewTime(t0)
	deleting.DeletionTimestamp = &now
	live := podOf(rs, "live", t0)
	f := newFixture(t, rs, done, failed, deleting, live)
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if got := f.api.count("create"); got != 1 {
		t.Errorf("creates = %d, want 1 (only one active pod)", got)
	}
	if f.api.count("delete") != 0 {
		t.Errorf("deleted an inactive pod: %v", f.api.actions)
	}
	if st := f.api.statuses[0]; st.Replicas != 1 {
		t.Errorf("status.replicas = %d, want 1", st.Replicas)
	}
}

func TestSyncClaimsPods(t *testing.T) {
	rs := newRS(2)
	orphan := podOf(nil, "orphan", t0)
	foreign := podOf(&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "other", UID: "other-uid"}}, "foreign", t0)
	strayed := podOf(rs, "strayed", t0)
	strayed.Labels = map[string]string{"app": "db"}
	mine := podOf(rs, "mine", t0)
	f := newFixture(t, rs, orphan, foreign, strayed, mine)
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if f.api.count("adopt ns/orphan") != 1 || f.api.count("release ns/strayed") != 1 {
		t.Errorf("actions = %v, want orphan adopted and strayed released", f.api.actions)
	}
	if f.api.count("adopt ns/foreign")+f.api.count("release ns/foreign")+f.api.count("delete") != 0 {
		t.Errorf("touched a pod it does not own: %v", f.api.actions)
	}
	// mine + orphan make 2: nothing to create or delete.
	if f.api.count("create") != 0 {
		t.Errorf("actions = %v, want no create", f.api.actions)
	}
}

func TestSyncStatus(t *testing.T) {
	rs := newRS(3)
	rs.Spec.MinReadySeconds = 10
	longReady := podOf(rs, "a", t0.Add(-time.Minute))
	justReady := podOf(rs, "b", t0.Add(-time.Second))
	unready := podOf(rs, "c", time.Time{})
	unready.Labels = map[string]string{"app": "web"} // matches the selector, not the whole template
	f := newFixture(t, rs, longReady, justReady, unready)
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	want := appsv1.ReplicaSetStatus{Replicas: 3, FullyLabeledReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 1, ObservedGeneration: 2}
	if len(f.api.statuses) != 1 {
		t.Fatalf("status writes = %d, want 1", len(f.api.statuses))
	}
	if diff := cmp.Diff(want, f.api.statuses[0]); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}

	// The same status again is not written.
	rs2 := rs.DeepCopy()
	rs2.Status = want
	if err := f.rsIdx.Update(rs2); err != nil {
		t.Fatal(err)
	}
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if len(f.api.statuses) != 1 {
		t.Errorf("status writes = %d, want still 1", len(f.api.statuses))
	}
}

func TestSyncRequeuesForAvailability(t *testing.T) {
	rs := newRS(2)
	rs.Spec.MinReadySeconds = 30
	f := newFixture(t, rs, podOf(rs, "a", t0.Add(-time.Second)), podOf(rs, "b", t0.Add(-time.Second)))
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ns/web after 30s"}, f.requeued); diff != "" {
		t.Errorf("requeues (-want +got):\n%s", diff)
	}
	f.clock.Step(30 * time.Second)
	rs2 := rs.DeepCopy()
	rs2.Status = f.api.statuses[0]
	if err := f.rsIdx.Update(rs2); err != nil {
		t.Fatal(err)
	}
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if got := f.api.statuses[len(f.api.statuses)-1].AvailableReplicas; got != 2 {
		t.Errorf("availableReplicas after minReadySeconds = %d, want 2", got)
	}
}

func TestSyncDeletedReplicaSetForgetsExpectations(t *testing.T) {
	f := newFixture(t, newRS(1))
	f.s.expectations.ExpectCreations("ns/gone", 3)
	if err := f.s.sync(t.Context(), "ns/gone"); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := f.s.expectations.GetExpectations("ns/gone"); ok {
		t.Error("expectations of a deleted ReplicaSet were kept")
	}
}

func TestSyncBurstReplicas(t *testing.T) {
	f := newFixture(t, newRS(20))
	f.s.burstReplicas = 5
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if got := f.api.count("create"); got != 5 {
		t.Errorf("creates = %d, want the burst of 5", got)
	}
}

func TestPodFromTemplate(t *testing.T) {
	rs := newRS(1)
	pod := podFromTemplate(rs, replicaSetKind)
	if pod.GenerateName != "web-" || pod.Namespace != "ns" {
		t.Errorf("generateName, namespace = %q, %q", pod.GenerateName, pod.Namespace)
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.UID != rs.UID || ref.Kind != "ReplicaSet" || ref.APIVersion != "apps/v1" ||
		ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Errorf("controller ref = %+v", ref)
	}
	pod.Labels["x"] = "y"
	if _, ok := rs.Spec.Template.Labels["x"]; ok {
		t.Error("pod shares its labels map with the template")
	}
}

func TestSlowStartBatch(t *testing.T) {
	for _, tc := range []struct {
		name      string
		count     int
		failAfter int // -1: never
		wantOK    int
		wantCalls int
	}{
		{"all succeed", 10, -1, 10, 10},
		{"first fails", 10, 0, 0, 1},
		{"second batch fails", 10, 2, 2, 3},
		{"zero", 0, -1, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			calls, ok := 0, 0
			got, err := slowStartBatch(tc.count, 1, func() error {
				mu.Lock()
				defer mu.Unlock()
				calls++
				if tc.failAfter >= 0 && ok >= tc.failAfter {
					return errors.New("boom")
				}
				ok++
				return nil
			})
			if got != tc.wantOK || calls != tc.wantCalls || (err != nil) != (tc.failAfter >= 0 && tc.count > 0) {
				t.Errorf("slowStartBatch = %d, %v with %d calls; want %d with %d calls", got, err, calls, tc.wantOK, tc.wantCalls)
			}
		})
	}
}

func TestActivePodsLess(t *testing.T) {
	base := func(name string) *corev1.Pod { return podOf(nil, name, t0.Add(-time.Hour)) }
	mod := func(name string, f func(*corev1.Pod)) *corev1.Pod { p := base(name); f(p); return p }
	for _, tc := range []struct {
		name         string
		first, later *corev1.Pod
		rankF, rankL int
	}{
		{"unassigned first", mod("a", func(p *corev1.Pod) { p.Spec.NodeName = "" }), base("b"), 0, 0},
		{"pending first", mod("a", func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }), base("b"), 0, 0},
		{"unknown before running", mod("a", func(p *corev1.Pod) { p.Status.Phase = corev1.PodUnknown }), base("b"), 0, 0},
		{"unready first", mod("a", func(p *corev1.Pod) { p.Status.Conditions = nil }), base("b"), 0, 0},
		{"cheaper first", mod("a", func(p *corev1.Pod) { p.Annotations = map[string]string{PodDeletionCostAnnotation: "-5"} }), base("b"), 0, 0},
		{"doubled up first", base("a"), base("b"), 3, 1},
		{"ready more recently first", mod("a", func(p *corev1.Pod) { p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t0) }), base("b"), 0, 0},
		{"more restarts first", mod("a", func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{RestartCount: 4}}
		}), base("b"), 0, 0},
		{"newer first", mod("a", func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t0) }), base("b"), 0, 0},
		{"by uid last", base("a"), base("b"), 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !ActivePodsLess(tc.first, tc.later, tc.rankF, tc.rankL) {
				t.Error("first is not less than later")
			}
			if ActivePodsLess(tc.later, tc.first, tc.rankL, tc.rankF) {
				t.Error("later is less than first")
			}
		})
	}
}

func TestSyncClearsReplicaFailureOnRecovery(t *testing.T) {
	rs := newRS(1)
	f := newFixture(t, rs)
	f.api.failCreateAfter = 0
	if err := f.sync(); err == nil {
		t.Fatal("sync succeeded with failing creates")
	}
	failed := rs.DeepCopy()
	failed.Status = f.api.statuses[0]
	if err := f.rsIdx.Update(failed); err != nil {
		t.Fatal(err)
	}
	f.api.failCreateAfter = -1
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if got := f.api.statuses[len(f.api.statuses)-1].Conditions; len(got) != 0 {
		t.Errorf("conditions after recovery = %+v, want none", got)
	}
}

func TestSyncDeletingReplicaSetCreatesNothing(t *testing.T) {
	rs := newRS(3)
	now := metav1.NewTime(t0)
	rs.DeletionTimestamp = &now
	f := newFixture(t, rs, podOf(rs, "a", t0))
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if n := f.api.count("create") + f.api.count("delete"); n != 0 {
		t.Errorf("a ReplicaSet being deleted wrote pods: %v", f.api.actions)
	}
	if st := f.api.statuses[0]; st.Replicas != 1 {
		t.Errorf("status.replicas = %d, want 1", st.Replicas)
	}
}

func TestSyncTerminatingReplicas(t *testing.T) {
	rs := newRS(1)
	now := metav1.NewTime(t0)
	deleting := func(p *corev1.Pod) *corev1.Pod { p.DeletionTimestamp = &now; return p }
	finished := deleting(podOf(rs, "finished", t0))
	finished.Status.Phase = corev1.PodSucceeded
	pods := []*corev1.Pod{
		podOf(rs, "live", t0),
		deleting(podOf(rs, "going", t0)),
		finished,
		deleting(podOf(&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "other", UID: "other-uid"}}, "foreign", t0)),
	}
	for _, tc := range []struct {
		name string
		on   bool
		want *int32
	}{
		{"gate on", true, ptrTo(int32(1))},
		{"gate off", false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, rs, pods...)
			f.s.countTerminating = tc.on
			if err := f.sync(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, f.api.statuses[0].TerminatingReplicas); diff != "" {
				t.Errorf("terminatingReplicas (-want +got):\n%s", diff)
			}
			if f.api.statuses[0].Replicas != 1 {
				t.Errorf("replicas = %d, want 1", f.api.statuses[0].Replicas)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

func TestNewDefaultGatesCountTerminating(t *testing.T) {
	gates, err := defaultGates()
	if err != nil {
		t.Fatal(err)
	}
	if !gates.Enabled(DeploymentReplicaSetTerminatingReplicas) {
		t.Error("DeploymentReplicaSetTerminatingReplicas is off by default, want on as in Kubernetes 1.35+")
	}
}

func TestSyncDeletesDoubledUpPodsOfTheDeploymentFirst(t *testing.T) {
	yes := true
	owned := func(rs *appsv1.ReplicaSet, name string) *appsv1.ReplicaSet {
		rs.Name, rs.UID = name, types.UID(name+"-uid")
		rs.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "d", UID: "d-uid", Controller: &yes}}
		return rs
	}
	rs := owned(newRS(1), "web")
	sibling := owned(newRS(2), "web-old")
	sibling.Spec.Selector.MatchLabels = map[string]string{"app": "web", "rev": "old"}
	onNode := func(p *corev1.Pod, node string) *corev1.Pod { p.Spec.NodeName = node; return p }
	// web's pods: "crowded" on n1 with both of the sibling's pods, "alone" on
	// n2 and newer. Without the sibling, the newer pod would go first.
	crowded := onNode(podOf(rs, "crowded", t0.Add(-time.Hour)), "n1")
	alone := onNode(podOf(rs, "alone", t0.Add(-time.Minute)), "n2")
	alone.CreationTimestamp = metav1.NewTime(t0)
	old1 := onNode(podOf(sibling, "old1", t0.Add(-time.Hour)), "n1")
	old2 := onNode(podOf(sibling, "old2", t0.Add(-time.Hour)), "n1")
	for _, p := range []*corev1.Pod{old1, old2} {
		p.Labels = map[string]string{"app": "web", "rev": "old"}
	}
	// web selects app=web, so the sibling's pods match it too; they are
	// claimed by neither (foreign controller), but count as related.
	f := newFixture(t, rs, crowded, alone, old1, old2)
	if err := f.rsIdx.Add(sibling); err != nil {
		t.Fatal(err)
	}
	if err := f.s.sync(t.Context(), "ns/web"); err != nil {
		t.Fatal(err)
	}
	if f.api.count("delete ns/crowded") != 1 || f.api.count("delete") != 1 {
		t.Errorf("actions = %v, want only ns/crowded deleted", f.api.actions)
	}
}
