package deployment

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/controller/record"
)

// fakeDeployments records status writes and the annotations updates change.
type fakeDeployments struct {
	current  *appsv1.Deployment
	statuses []appsv1.DeploymentStatus
	patches  []map[string]string
}

func (f *fakeDeployments) Get(context.Context, string, string) (*appsv1.Deployment, error) {
	return f.current.DeepCopy(), nil
}

func (f *fakeDeployments) UpdateStatus(_ context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	f.statuses = append(f.statuses, *d.Status.DeepCopy())
	f.current.Status = *d.Status.DeepCopy()
	return f.current.DeepCopy(), nil
}

// Update records the annotations that d changes and keeps d's metadata;
// the stored spec and status stay, as an update of the object leaves the
// status alone.
func (f *fakeDeployments) Update(_ context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	if d.ResourceVersion != f.current.ResourceVersion {
		return nil, apierrors.NewConflict(appsv1.Resource("deployments"), d.Name, errors.New("the object has been modified"))
	}
	changed := map[string]string{}
	for k, v := range d.Annotations {
		if f.current.Annotations[k] != v {
			changed[k] = v
		}
	}
	f.patches = append(f.patches, changed)
	gen := f.current.Generation // the server's to keep
	d.ObjectMeta.DeepCopyInto(&f.current.ObjectMeta)
	f.current.Generation = gen
	return f.current.DeepCopy(), nil
}

// recordedEvents keeps events as "type reason message".
type recordedEvents struct{ events []string }

func (r *recordedEvents) Eventf(_ record.Object, eventType, reason, format string, args ...any) {
	r.events = append(r.events, eventType+" "+reason+" "+fmt.Sprintf(format, args...))
}

// creatingRSWriter is fakeRSWriter with Create failing with AlreadyExists
// for names it already holds, as the API server does.
type creatingRSWriter struct {
	*fakeRSWriter
	patches int
}

func (w *creatingRSWriter) Create(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	if _, ok := w.sets[rs.Name]; ok {
		return nil, apierrors.NewAlreadyExists(schema.GroupResource{Group: "apps", Resource: "replicasets"}, rs.Name)
	}
	rs = rs.DeepCopy()
	rs.UID = types.UID(rs.Name + "-uid")
	return w.fakeRSWriter.Create(ctx, rs)
}

func (w *creatingRSWriter) Patch(context.Context, string, string, types.PatchType, []byte) error {
	w.patches++
	return nil
}

type syncFixture struct {
	s      *syncer
	rs     *creatingRSWriter
	ds     *fakeDeployments
	events *recordedEvents
}

func newSyncFixture(t *testing.T, d *appsv1.Deployment, sets ...*appsv1.ReplicaSet) *syncFixture {
	t.Helper()
	dIdx, err := cache.NewIndexer(cache.IndexerConfig[*appsv1.Deployment]{})
	if err != nil {
		t.Fatal(err)
	}
	rsIdx, err := cache.NewIndexer(cache.IndexerConfig[*appsv1.ReplicaSet]{})
	if err != nil {
		t.Fatal(err)
	}
	podIdx, err := cache.NewIndexer(cache.IndexerConfig[*corev1.Pod]{})
	if err != nil {
		t.Fatal(err)
	}
	if err := dIdx.Add(d); err != nil {
		t.Fatal(err)
	}
	for _, rs := range sets {
		if err := rsIdx.Add(rs); err != nil {
			t.Fatal(err)
		}
	}
	f := &syncFixture{
		rs:     &creatingRSWriter{fakeRSWriter: newFakeRSWriter(sets...)},
		ds:     &fakeDeployments{current: d.DeepCopy()},
		events: &recordedEvents{},
	}
	f.s = &syncer{
		deployments: cache.NewLister(dIdx, schema.GroupResource{Group: "apps", Resource: "deployments"}),
		replicaSets: cache.NewLister(rsIdx, schema.GroupResource{Group: "apps", Resource: "replicasets"}),
		pods:        cache.NewLister(podIdx, schema.GroupResource{Resource: "pods"}),
		rsWriter:    f.rs,
		dWriter:     f.ds,
		recorder:    f.events,
		clock:       clocktesting.NewFakePassiveClock(time.Unix(1000, 0)),
	}
	return f
}

func TestSyncEmptySelector(t *testing.T) {
	d := newDeployment(3, "1", "1")
	d.Spec.Selector = &metav1.LabelSelector{}
	d.Generation = 2
	orphan := newRS("orphan", 1, 1, 1, nil)
	orphan.Labels = map[string]string{"app": "web"}
	f := newSyncFixture(t, d, orphan)
	if err := f.s.sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	if len(f.ds.statuses) != 1 || f.ds.statuses[0].ObservedGeneration != 2 {
		t.Errorf("status writes %+v, want one with observedGeneration 2", f.ds.statuses)
	}
	if f.rs.updates != 0 || f.rs.patches != 0 || len(f.rs.sets) != 1 {
		t.Errorf("replica sets touched: %d updates, %d patches, %d sets", f.rs.updates, f.rs.patches, len(f.rs.sets))
	}
	if len(f.events.events) != 1 || !strings.HasPrefix(f.events.events[0], "Warning SelectingAll ") {
		t.Errorf("events %q, want one SelectingAll warning", f.events.events)
	}
}

func TestSyncCreatesFirstReplicaSet(t *testing.T) {
	d := newDeployment(3, "25%", "25%")
	deadline := int32(600)
	d.Spec.ProgressDeadlineSeconds = &deadline
	f := newSyncFixture(t, d)
	if err := f.s.sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	hash := ComputeHash(&d.Spec.Template, nil)
	rs, ok := f.rs.sets["web-"+hash]
	if !ok || len(f.rs.sets) != 1 {
		t.Fatalf("sets %v, want web-%s", f.rs.sizes(), hash)
	}
	if *rs.Spec.Replicas != 3 {
		t.Errorf("replicas = %d, want 3", *rs.Spec.Replicas)
	}
	wantAnn := map[string]string{RevisionAnnotation: "1", DesiredReplicasAnnotation: "3", MaxReplicasAnnotation: "4"}
	for k, v := range wantAnn {
		if rs.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, rs.Annotations[k], v)
		}
	}
	if ref := metav1.GetControllerOf(rs); ref == nil || ref.UID != d.UID || ref.Kind != "Deployment" {
		t.Errorf("controller ref %+v", ref)
	}
	if rs.Spec.Selector.MatchLabels[PodTemplateHashLabel] != hash || rs.Spec.Template.Labels[PodTemplateHashLabel] != hash || rs.Spec.Template.Labels["app"] != "web" {
		t.Errorf("selector %v, template labels %v: want the hash label added", rs.Spec.Selector.MatchLabels, rs.Spec.Template.Labels)
	}
	if d.Spec.Template.Labels[PodTemplateHashLabel] != "" {
		t.Error("the cached deployment's template was modified")
	}
	if want := "Normal ScalingReplicaSet Scaled up replica set web-" + hash + " from 0 to 3"; len(f.events.events) == 0 || f.events.events[0] != want {
		t.Errorf("events %q, want first %q", f.events.events, want)
	}
	if len(f.ds.patches) != 1 || f.ds.patches[0][RevisionAnnotation] != "1" {
		t.Errorf("deployment annotation patches %v, want revision 1", f.ds.patches)
	}
	last := f.ds.statuses[len(f.ds.statuses)-1]
	if c := getCondition(last, appsv1.DeploymentProgressing); c == nil || c.Reason != ReasonNewReplicaSetCreated {
		t.Errorf("Progressing = %+v, want %s", c, ReasonNewReplicaSetCreated)
	}
	if c := getCondition(last, appsv1.DeploymentAvailable); c == nil || c.Reason != ReasonMinimumReplicasUnavailable {
		t.Errorf("Available = %+v, want %s", c, ReasonMinimumReplicasUnavailable)
	}
}

func TestSyncHashCollision(t *testing.T) {
	d := newDeployment(3, "25%", "25%")
	hash := ComputeHash(&d.Spec.Template, nil)
	// Another owner's set already has the name the new set would get.
	other := newRS("web-"+hash, 0, 0, 1, nil)
	other.Spec.Template = *template("other", map[string]string{"app": "other"})
	other.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "x", UID: "x-uid", Controller: new(bool)}}
	*other.OwnerReferences[0].Controller = true
	f := newSyncFixture(t, d, other)
	err := f.s.sync(context.Background(), "default/web")
	if !apierrors.IsAlreadyExists(err) {
		t.Fatalf("sync = %v, want AlreadyExists", err)
	}
	if len(f.ds.statuses) == 0 || f.ds.statuses[len(f.ds.statuses)-1].CollisionCount == nil || *f.ds.statuses[len(f.ds.statuses)-1].CollisionCount != 1 {
		t.Fatalf("status writes %+v, want collisionCount 1", f.ds.statuses)
	}
	one := int32(1)
	if ComputeHash(&d.Spec.Template, &one) == hash {
		t.Error("the collision count does not change the name")
	}
}

func TestSyncAdoptsMatchingOrphan(t *testing.T) {
	d := newDeployment(3, "25%", "25%")
	orphan := newRS("stray", 0, 0, 1, nil)
	orphan.Labels = map[string]string{"app": "web"}
	orphan.Spec.Template = *template("old", map[string]string{"app": "web"})
	f := newSyncFixture(t, d, orphan)
	if err := f.s.sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	if f.rs.patches != 1 {
		t.Errorf("%d adoption patches, want 1", f.rs.patches)
	}
}

func TestSyncTimedOut(t *testing.T) {
	d := newDeployment(2, "1", "0")
	deadline := int32(60)
	d.Spec.ProgressDeadlineSeconds = &deadline
	d.Annotations = map[string]string{RevisionAnnotation: "1"}
	hash := ComputeHash(&d.Spec.Template, nil)
	rs := newRS("web-"+hash, 2, 0, 1, map[string]string{RevisionAnnotation: "1", DesiredReplicasAnnotation: "2", MaxReplicasAnnotation: "3"})
	rs.Spec.Template = *d.Spec.Template.DeepCopy()
	rs.Spec.Template.Labels[PodTemplateHashLabel] = hash
	rs.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(d, deploymentKind)}
	rs.Labels = rs.Spec.Template.Labels
	for _, tt := range []struct {
		name     string
		age      time.Duration
		wantDead bool
	}{
		{name: "within the deadline", age: 59 * time.Second},
		{name: "past the deadline", age: 61 * time.Second, wantDead: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dd := d.DeepCopy()
			updated := metav1.NewTime(time.Unix(1000, 0).Add(-tt.age))
			dd.Status = appsv1.DeploymentStatus{
				ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2, UnavailableReplicas: 2,
				Conditions: []appsv1.DeploymentCondition{{
					Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse, Reason: ReasonMinimumReplicasUnavailable,
					Message: "Deployment does not have minimum availability.", LastUpdateTime: updated, LastTransitionTime: updated,
				}, {
					Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: ReasonReplicaSetUpdated,
					LastUpdateTime: updated, LastTransitionTime: updated,
				}},
			}
			var requeued time.Duration
			f := newSyncFixture(t, dd, rs)
			f.s.enqueueAfter = func(_ string, after time.Duration) { requeued = after }
			if err := f.s.sync(context.Background(), "default/web"); err != nil {
				t.Fatal(err)
			}
			last := f.ds.current.Status
			c := getCondition(last, appsv1.DeploymentProgressing)
			if dead := c.Reason == ReasonProgressDeadlineExceeded; dead != tt.wantDead {
				t.Errorf("Progressing reason %s, want timed out %v", c.Reason, tt.wantDead)
			}
			if !tt.wantDead && len(f.ds.statuses) != 0 {
				t.Errorf("status written within the deadline: %+v", f.ds.statuses)
			}
			if !tt.wantDead && requeued != 2*time.Second {
				t.Errorf("requeued after %v, want 2s (deadline in 1s, plus 1s)", requeued)
			}
		})
	}
}

func TestSetDeploymentRevisionSpecChanged(t *testing.T) {
	d := newDeployment(3, "1", "1")
	d.ResourceVersion = "10"
	f := newSyncFixture(t, d)
	// A spec update landed after the cache read: the update of the
	// annotation conflicts instead of writing over it.
	f.ds.current.Generation, f.ds.current.ResourceVersion = 2, "11"
	err := f.s.setDeploymentRevision(context.Background(), d.DeepCopy(), "1")
	if !apierrors.IsConflict(err) {
		t.Fatalf("setDeploymentRevision = %v, want a conflict", err)
	}
	// The server answered with another generation for the same version:
	// what the sync decided is stale.
	f.ds.current.ResourceVersion = "10"
	err = f.s.setDeploymentRevision(context.Background(), d.DeepCopy(), "1")
	if err == nil || !strings.Contains(err.Error(), "changed during sync") {
		t.Fatalf("setDeploymentRevision = %v, want a changed-during-sync error", err)
	}
	dd := d.DeepCopy()
	f.ds.current.Generation = 1
	if err := f.s.setDeploymentRevision(context.Background(), dd, "1"); err != nil {
		t.Fatal(err)
	}
	if dd.Annotations[RevisionAnnotation] != "1" {
		t.Errorf("annotations %v, want revision 1", dd.Annotations)
	}
}
