package statefulset

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kplane/kplane/pkg/controller/history"
)

func TestOrderedReadyCreatesPodsOneAtATimeInOrdinalOrder(t *testing.T) {
	f := newFixture(t, newSet(3))
	steps := []struct {
		name   string
		before func()
		want   []string
	}{
		{name: "first sync creates the revision and pod 0 only", want: []string{"create revision 1", "create pod web-0"}},
		{name: "a pending pod 0 holds pod 1 back", want: nil},
		{name: "a running but unready pod 0 holds pod 1 back", before: func() { f.setPhase("web-0", corev1.PodRunning, false) }, want: nil},
		{name: "pod 0 ready: pod 1 is created", before: func() { f.setPhase("web-0", corev1.PodRunning, true) }, want: []string{"create pod web-1"}},
		{name: "pod 1 ready: pod 2 is created", before: func() { f.setPhase("web-1", corev1.PodRunning, true) }, want: []string{"create pod web-2"}},
		{name: "all ready: nothing to do", before: func() { f.setPhase("web-2", corev1.PodRunning, true) }, want: nil},
	}
	for _, st := range steps {
		if st.before != nil {
			st.before()
		}
		if diff := cmp.Diff(st.want, f.syncActions()); diff != "" {
			t.Fatalf("%s: actions (-want +got):\n%s", st.name, diff)
		}
	}
	status := f.lastStatus()
	if status.Replicas != 3 || status.ReadyReplicas != 3 || status.AvailableReplicas != 3 || status.UpdatedReplicas != 3 ||
		status.CurrentRevision != status.UpdateRevision || status.ObservedGeneration != 1 || ptr.Deref(status.CollisionCount, -1) != 0 {
		t.Errorf("status %+v", status)
	}
}

func TestParallelCreatesAllPodsAtOnce(t *testing.T) {
	set := newSet(3)
	set.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
	f := newFixture(t, set)
	acts := f.syncActions()
	slices.Sort(acts)
	want := []string{"create pod web-0", "create pod web-1", "create pod web-2", "create revision 1"}
	if diff := cmp.Diff(want, acts); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
}

func TestPodIdentity(t *testing.T) {
	set := newSet(1)
	set.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: 5}
	f := newFixture(t, set)
	f.sync()
	p := f.pod("web-5")
	rev := f.lastStatus().UpdateRevision
	checks := map[string][2]string{
		"hostname":               {p.Spec.Hostname, "web-5"},
		"subdomain":              {p.Spec.Subdomain, "web-svc"},
		"pod-name label":         {p.Labels[appsv1.StatefulSetPodNameLabel], "web-5"},
		"pod-index label":        {p.Labels[appsv1.PodIndexLabel], "5"},
		"revision label":         {p.Labels[appsv1.StatefulSetRevisionLabel], rev},
		"template label":         {p.Labels["app"], "web"},
		"controller":             {metav1.GetControllerOf(p).Name + "/" + metav1.GetControllerOf(p).Kind, "web/StatefulSet"},
		"revision name is hashy": {fmt.Sprint(strings.HasPrefix(rev, "web-")), "true"},
	}
	for what, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s = %q, want %q", what, c[0], c[1])
		}
	}
	if want := "SuccessfulCreate: create Pod web-5 in StatefulSet web successful"; !slices.Contains(f.rec.events, want) {
		t.Errorf("events %v lack %q", f.rec.events, want)
	}
}

func TestScaleDown(t *testing.T) {
	tests := []struct {
		name   string
		policy appsv1.PodManagementPolicyType
		unwell string // pod made unready before scaling down
		want   [][]string
	}{
		{
			name: "OrderedReady deletes the highest ordinal first, one at a time", policy: appsv1.OrderedReadyPodManagement,
			want: [][]string{{"delete pod web-3"}, {"delete pod web-2"}, {"delete pod web-1"}, nil},
		},
		{
			name: "OrderedReady does not scale down while a pod is unhealthy", policy: appsv1.OrderedReadyPodManagement, unwell: "web-0",
			want: [][]string{nil, nil},
		},
		{
			name: "OrderedReady deletes an unhealthy condemned pod first", policy: appsv1.OrderedReadyPodManagement, unwell: "web-2",
			want: [][]string{{"delete pod web-3"}, {"delete pod web-2"}, {"delete pod web-1"}},
		},
		{
			name: "Parallel deletes every surplus pod at once", policy: appsv1.ParallelPodManagement,
			want: [][]string{{"delete pod web-1", "delete pod web-2", "delete pod web-3"}, nil},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := newSet(4)
			set.Spec.PodManagementPolicy = tt.policy
			f := newFixture(t, set)
			f.settle()
			if tt.unwell != "" {
				f.setPhase(tt.unwell, corev1.PodRunning, false)
			}
			f.updateSet(func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](1) })
			for i, want := range tt.want {
				got := f.syncActions()
				slices.Sort(got)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("sync %d: actions (-want +got):\n%s", i, diff)
				}
			}
		})
	}
}

func TestFailedAndSucceededPodsAreRecreated(t *testing.T) {
	for _, phase := range []corev1.PodPhase{corev1.PodFailed, corev1.PodSucceeded} {
		t.Run(string(phase), func(t *testing.T) {
			f := newFixture(t, newSet(2))
			f.settle()
			f.setPhase("web-0", phase, false)
			if diff := cmp.Diff([]string{"delete pod web-0"}, f.syncActions()); diff != "" {
				t.Fatalf("first sync (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"create pod web-0"}, f.syncActions()); diff != "" {
				t.Fatalf("second sync (-want +got):\n%s", diff)
			}
		})
	}
}

// deletedPods returns the pods deleted, in order.
func deletedPods(acts []string) []string {
	var out []string
	for _, a := range acts {
		if name, ok := strings.CutPrefix(a, "delete pod "); ok {
			out = append(out, name)
		}
	}
	return out
}

func TestRollingUpdate(t *testing.T) {
	tests := []struct {
		name        string
		partition   int32
		wantDeleted []string
		wantUpdated int32
		wantRolled  bool // currentRevision became the update revision
	}{
		{name: "updates every pod from the highest ordinal down", partition: 0, wantDeleted: []string{"web-2", "web-1", "web-0"}, wantUpdated: 3, wantRolled: true},
		{name: "a partition keeps the ordinals below it at the current revision", partition: 2, wantDeleted: []string{"web-2"}, wantUpdated: 1},
		{name: "a partition beyond the replicas updates nothing", partition: 5, wantUpdated: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := newSet(3)
			set.Spec.UpdateStrategy.RollingUpdate.Partition = &tt.partition
			f := newFixture(t, set)
			f.settle()
			before := f.lastStatus().CurrentRevision
			f.updateSet(withImage("nginx:2"))
			acts := f.settle()
			if diff := cmp.Diff(tt.wantDeleted, deletedPods(acts)); diff != "" {
				t.Errorf("deleted (-want +got):\n%s", diff)
			}
			st := f.lastStatus()
			if st.UpdatedReplicas != tt.wantUpdated || (st.CurrentRevision == st.UpdateRevision) != tt.wantRolled || st.UpdateRevision == before {
				t.Errorf("status %+v (revision before %s)", st, before)
			}
			for i := range 3 {
				want := "nginx:1"
				if int32(i) >= tt.partition {
					want = "nginx:2"
				}
				if got := imageOf(f.pod(fmt.Sprintf("web-%d", i))); got != want {
					t.Errorf("web-%d runs %s, want %s", i, got, want)
				}
			}
		})
	}
}

func TestRollingUpdateWaitsForUnavailablePod(t *testing.T) {
	f := newFixture(t, newSet(3))
	f.settle()
	f.updateSet(withImage("nginx:2"))
	if diff := cmp.Diff([]string{"create revision 2", "delete pod web-2"}, f.syncActions()); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"create pod web-2"}, f.syncActions()); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	// web-2 is pending at the new revision: web-1 must wait.
	if acts := f.syncActions(); len(acts) != 0 {
		t.Fatalf("rolled on past an unready pod: %v", acts)
	}
}

func TestMaxUnavailable(t *testing.T) {
	tests := []struct {
		name  string
		gate  bool
		value intstr.IntOrString
		want  []string
	}{
		{name: "maxUnavailable 2 takes two pods down at once", gate: true, value: intstr.FromInt32(2), want: []string{"delete pod web-3", "delete pod web-2"}},
		{name: "a percentage is of the replicas, rounded down", gate: true, value: intstr.FromString("50%"), want: []string{"delete pod web-3", "delete pod web-2"}},
		{name: "with MaxUnavailableStatefulSet off one pod at a time", gate: false, value: intstr.FromInt32(2), want: []string{"delete pod web-3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := newSet(4)
			set.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
			set.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = &tt.value
			f := newFixture(t, set)
			f.s.maxUnavailable = tt.gate
			f.settle()
			f.updateSet(withImage("nginx:2"))
			got := f.syncActions()[1:] // after "create revision 2"
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestOnDeleteReplacesOnlyDeletedPods(t *testing.T) {
	set := newSet(2)
	set.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
	f := newFixture(t, set)
	f.settle()
	f.updateSet(withImage("nginx:2"))
	if diff := cmp.Diff([]string{"create revision 2"}, f.settle()); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	_ = f.podIdx.Delete(f.pod("web-1"))
	if diff := cmp.Diff([]string{"create pod web-1"}, f.settle()); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if imageOf(f.pod("web-0")) != "nginx:1" || imageOf(f.pod("web-1")) != "nginx:2" {
		t.Errorf("images %s, %s", imageOf(f.pod("web-0")), imageOf(f.pod("web-1")))
	}
	if st := f.lastStatus(); st.UpdatedReplicas != 1 || st.CurrentReplicas != 1 || st.CurrentRevision == st.UpdateRevision {
		t.Errorf("status %+v", st)
	}
}

func withClaims(set *appsv1.StatefulSet, whenDeleted, whenScaled appsv1.PersistentVolumeClaimRetentionPolicyType) *appsv1.StatefulSet {
	set.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: map[string]string{"tier": "db"}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}}
	set.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: whenDeleted, WhenScaled: whenScaled}
	return set
}

func TestClaimsAreCreatedBeforeTheirPod(t *testing.T) {
	const retain = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	f := newFixture(t, withClaims(newSet(1), retain, retain))
	if diff := cmp.Diff([]string{"create revision 1", "create pvc data-web-0", "create pod web-0"}, f.syncActions()); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	p := f.pod("web-0")
	if len(p.Spec.Volumes) != 1 || p.Spec.Volumes[0].Name != "data" || p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data-web-0" {
		t.Errorf("volumes %+v", p.Spec.Volumes)
	}
	pvc, _ := f.pvcIdx.GetByKey("ns/data-web-0")
	if pvc.Labels["app"] != "web" || pvc.Labels["tier"] != "db" || len(pvc.OwnerReferences) != 0 {
		t.Errorf("pvc %+v", pvc.ObjectMeta)
	}
	if !slices.Contains(f.rec.events, "SuccessfulCreate: create Claim data-web-0 Pod web-0 in StatefulSet web success") {
		t.Errorf("events %v", f.rec.events)
	}
	// A pending pod whose claim went missing gets it back.
	_ = f.pvcIdx.Delete(pvc)
	if diff := cmp.Diff([]string{"create pvc data-web-0"}, f.syncActions()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestClaimRetentionPolicy(t *testing.T) {
	const (
		retain = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
		del    = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	)
	tests := []struct {
		name                    string
		whenDeleted, whenScaled appsv1.PersistentVolumeClaimRetentionPolicyType
		// wantOwnersUp are the owners of data-web-1 while web-1 is wanted;
		// wantScaleDown the writes of the scale-down to 1 replica.
		wantOwnersUp  []string
		wantScaleDown []string
	}{
		{name: "Retain keeps claims unowned on scale-down", whenDeleted: retain, whenScaled: retain,
			wantScaleDown: []string{"delete pod web-1"}},
		{name: "whenDeleted=Delete makes the set own its claims", whenDeleted: del, whenScaled: retain,
			wantOwnersUp: []string{"StatefulSet/web"}, wantScaleDown: []string{"delete pod web-1"}},
		{name: "whenScaled=Delete hands a scaled-down claim to its pod before deleting it", whenDeleted: retain, whenScaled: del,
			wantScaleDown: []string{"update pvc data-web-1 owners=[Pod/web-1]", "delete pod web-1"}},
		{name: "both Delete moves a scaled-down claim from the set to its pod", whenDeleted: del, whenScaled: del,
			wantOwnersUp: []string{"StatefulSet/web"}, wantScaleDown: []string{"update pvc data-web-1 owners=[Pod/web-1]", "delete pod web-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, withClaims(newSet(2), tt.whenDeleted, tt.whenScaled))
			f.settle()
			pvc, ok := f.pvcIdx.GetByKey("ns/data-web-1")
			if !ok {
				t.Fatal("no claim data-web-1")
			}
			var owners []string
			for _, r := range pvc.OwnerReferences {
				owners = append(owners, r.Kind+"/"+r.Name)
			}
			if diff := cmp.Diff(tt.wantOwnersUp, owners); diff != "" {
				t.Errorf("owners while wanted (-want +got):\n%s", diff)
			}
			f.updateSet(func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](1) })
			if diff := cmp.Diff(tt.wantScaleDown, f.settle()); diff != "" {
				t.Errorf("scale-down (-want +got):\n%s", diff)
			}
			if _, ok := f.pvcIdx.GetByKey("ns/data-web-1"); !ok {
				t.Error("the controller deleted a claim itself")
			}
		})
	}
}

func TestStaleClaimHoldsPodCreation(t *testing.T) {
	const del = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	set := withClaims(newSet(1), appsv1.RetainPersistentVolumeClaimRetentionPolicyType, del)
	stale := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data-web-0",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "web-0", UID: "old-pod"}}}}
	f := newFixture(t, set, stale)
	if diff := cmp.Diff([]string{"create revision 1"}, f.syncActions()); diff != "" {
		t.Errorf("created a pod on a claim the garbage collector is deleting (-want +got):\n%s", diff)
	}
}

func TestRevisionHistory(t *testing.T) {
	set := newSet(1)
	set.Spec.RevisionHistoryLimit = ptr.To[int32](2)
	f := newFixture(t, set)
	f.settle()
	for i := 2; i <= 6; i++ {
		f.updateSet(withImage(fmt.Sprintf("nginx:%d", i)))
		f.settle()
	}
	var revs []int64
	for _, r := range f.revIdx.List() {
		revs = append(revs, r.Revision)
	}
	slices.Sort(revs)
	// The live revision (6) and the two newest older ones.
	if diff := cmp.Diff([]int64{4, 5, 6}, revs); diff != "" {
		t.Fatalf("revisions kept (-want +got):\n%s", diff)
	}
	// A rollback to image 5 renumbers revision 5 rather than creating one.
	f.updateSet(withImage("nginx:5"))
	acts := f.settle()
	if !slices.Contains(acts, "update revision 7") || slices.ContainsFunc(acts, func(a string) bool { return strings.HasPrefix(a, "create revision") }) {
		t.Errorf("rollback actions %v", acts)
	}
	if imageOf(f.pod("web-0")) != "nginx:5" {
		t.Errorf("image %s after rollback", imageOf(f.pod("web-0")))
	}
}

func TestRevisionDataIsTheTemplatePatchKubectlApplies(t *testing.T) {
	set := newSet(1)
	set.Annotations = map[string]string{"kubernetes.io/change-cause": "v1"}
	f := newFixture(t, set)
	f.sync()
	revs := f.revIdx.List()
	if len(revs) != 1 {
		t.Fatalf("revisions %d", len(revs))
	}
	rev := revs[0]
	var data struct {
		Spec struct {
			Template map[string]any `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(rev.Data.Raw, &data); err != nil {
		t.Fatal(err)
	}
	if data.Spec.Template["$patch"] != "replace" {
		t.Errorf("template patch lacks $patch: replace: %s", rev.Data.Raw)
	}
	if rev.Annotations["kubernetes.io/change-cause"] != "v1" || rev.Labels[history.HashLabel] == "" || rev.Labels["app"] != "web" {
		t.Errorf("revision meta %+v", rev.ObjectMeta)
	}
	// kubectl rollout undo: the patch written back over a later template
	// restores this one exactly.
	later := set.DeepCopy()
	withImage("nginx:9")(later)
	later.Spec.Template.Labels["extra"] = "x"
	restored, err := applyRevision(later, rev)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(set.Spec.Template, restored.Spec.Template); diff != "" {
		t.Errorf("restored template (-want +got):\n%s", diff)
	}
}

func TestHashCollisionBumpsCollisionCount(t *testing.T) {
	set := newSet(1)
	zero := int32(0)
	first, err := newRevision(set, 1, &zero)
	if err != nil {
		t.Fatal(err)
	}
	squatter := first.DeepCopy()
	squatter.OwnerReferences = nil
	squatter.Labels = map[string]string{"other": "x"} // not ours to list
	squatter.Data.Raw = []byte(`{"spec":{"template":{"$patch":"replace"}}}`)
	f := newFixture(t, set, squatter)
	f.sync()
	st := f.lastStatus()
	if ptr.Deref(st.CollisionCount, 0) != 1 || st.UpdateRevision == first.Name {
		t.Errorf("status %+v, squatter %s", st, first.Name)
	}
}

func TestMinReadySeconds(t *testing.T) {
	set := newSet(2)
	set.Spec.MinReadySeconds = 10
	f := newFixture(t, set)
	f.sync()
	f.setPhase("web-0", corev1.PodRunning, true)
	if acts := f.syncActions(); len(acts) != 0 {
		t.Fatalf("created the next pod before minReadySeconds: %v", acts)
	}
	if st := f.lastStatus(); st.ReadyReplicas != 1 || st.AvailableReplicas != 0 {
		t.Errorf("status %+v", st)
	}
	if len(f.requeued) == 0 || f.requeued[len(f.requeued)-1] != "ns/web after 10s" {
		t.Errorf("requeued %v", f.requeued)
	}
	f.clock.Step(10 * time.Second)
	if diff := cmp.Diff([]string{"create pod web-1"}, f.syncActions()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestExpectationsHoldBackWritesUntilObserved(t *testing.T) {
	set := newSet(2)
	set.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
	f := newFixture(t, set)
	f.api.live = false
	acts := f.syncActions()
	if len(acts) != 3 { // revision and two pods
		t.Fatalf("first sync %v", acts)
	}
	// The informer has not delivered the pods: no second round of creates.
	if acts := f.syncActions(); slices.ContainsFunc(acts, func(a string) bool { return strings.HasPrefix(a, "create pod") }) {
		t.Errorf("created again on a stale cache: %v", acts)
	}
	f.s.expectations.CreationObserved("ns/web")
	f.s.expectations.CreationObserved("ns/web")
	if acts := f.syncActions(); !slices.Contains(acts, "create pod web-0") {
		t.Errorf("expectations met, yet no create: %v", acts)
	}
}

func TestFailedCreateIsReported(t *testing.T) {
	f := newFixture(t, newSet(1))
	f.api.failCreatePod = apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "web-0", errors.New("quota exceeded"))
	if err := f.s.sync(t.Context(), "ns/web"); !apierrors.IsForbidden(err) {
		t.Fatalf("sync error %v, want Forbidden", err)
	}
	if len(f.rec.events) == 0 || !strings.HasPrefix(f.rec.events[len(f.rec.events)-1], "FailedCreate: create Pod web-0 in StatefulSet web failed error:") {
		t.Errorf("events %v", f.rec.events)
	}
	if ok := f.s.expectations.SatisfiedExpectations("ns/web"); !ok {
		t.Error("a failed create left an expectation behind")
	}
}

func TestOrphansAreAdoptedAndOthersLeftAlone(t *testing.T) {
	set := newSet(2)
	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-0", UID: "p0", Labels: map[string]string{"app": "web"}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	notMember := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "other-0", UID: "p1", Labels: map[string]string{"app": "web"}}}
	orphanRev := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-old", Labels: map[string]string{"app": "web"}}, Revision: 1}
	f := newFixture(t, set, orphan, notMember, orphanRev)
	acts := f.syncActions()
	for _, want := range []string{"adopt revision web-old", "adopt pod web-0"} {
		if !slices.Contains(acts, want) {
			t.Errorf("actions %v lack %q", acts, want)
		}
	}
	if slices.Contains(acts, "adopt pod other-0") {
		t.Errorf("adopted a pod not named as a member: %v", acts)
	}
}

func TestDeletedSetOnlyWritesStatus(t *testing.T) {
	set := newSet(2)
	now := metav1.NewTime(t0)
	set.DeletionTimestamp = &now
	f := newFixture(t, set)
	if acts := f.syncActions(); slices.ContainsFunc(acts, func(a string) bool { return strings.Contains(a, " pod ") }) {
		t.Errorf("touched pods of a set being deleted: %v", acts)
	}
}
