package apiserver

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestUpdateConflictOnStaleResourceVersion(t *testing.T) {
	e := newTestEnv(t)
	var d appsv1.Deployment
	e.mustCreate(deployPath("default", ""), testDeployment("d", 1), &d)
	first := d.DeepCopy()
	first.Labels = map[string]string{"a": "1"}
	var updated appsv1.Deployment
	e.do("PUT", deployPath("default", "d"), first).decode(t, &updated)
	if updated.ResourceVersion == d.ResourceVersion {
		t.Fatal("update kept the resourceVersion")
	}
	stale := d.DeepCopy()
	stale.Labels = map[string]string{"a": "2"}
	r := e.do("PUT", deployPath("default", "d"), stale)
	r.expect(t, 409, metav1.StatusReasonConflict)
	if st := r.status(t); st.Details == nil || st.Details.Name != "d" || st.Details.Group != "apps" || st.Details.Kind != "deployments" {
		t.Errorf("conflict details %+v", st.Details)
	}
	// Unconditional update (no resourceVersion) wins.
	stale.ResourceVersion = ""
	e.do("PUT", deployPath("default", "d"), stale).expect(t, 200, "")
}

func TestUpdateGenerationOnlyOnSpecChange(t *testing.T) {
	e := newTestEnv(t)
	var d appsv1.Deployment
	e.mustCreate(deployPath("default", ""), testDeployment("d", 1), &d)
	if d.Generation != 1 {
		t.Fatalf("generation %d after create", d.Generation)
	}
	d.Labels = map[string]string{"x": "y"}
	e.do("PUT", deployPath("default", "d"), &d).decode(t, &d)
	if d.Generation != 1 {
		t.Fatalf("label change bumped generation to %d", d.Generation)
	}
	d.Spec.Replicas = ptr(int32(4))
	e.do("PUT", deployPath("default", "d"), &d).decode(t, &d)
	if d.Generation != 2 {
		t.Fatalf("spec change: generation %d, want 2", d.Generation)
	}
	d.Status.Replicas = 4
	e.do("PUT", deployPath("default", "d")+"/status", &d).decode(t, &d)
	if d.Generation != 2 || d.Status.Replicas != 4 {
		t.Fatalf("status write: generation %d status %+v", d.Generation, d.Status)
	}
}

func TestStatusSubresourceRules(t *testing.T) {
	e := newTestEnv(t)
	var d appsv1.Deployment
	e.mustCreate(deployPath("default", ""), testDeployment("d", 1), &d)

	// The main resource ignores status.
	d.Status.Replicas = 7
	d = appsv1.Deployment{}
	e.do("PUT", deployPath("default", "d"), withStatus(e, 7)).decode(t, &d)
	if d.Status.Replicas != 0 {
		t.Fatalf("main resource write changed status: %+v", d.Status)
	}
	// The status subresource changes only status.
	d.Status.Replicas = 3
	d.Spec.Replicas = ptr(int32(9))
	d.Labels = map[string]string{"changed": "yes"}
	r := e.do("PUT", deployPath("default", "d")+"/status", &d)
	d = appsv1.Deployment{}
	r.decode(t, &d)
	if d.Status.Replicas != 3 || *d.Spec.Replicas != 1 || d.Labels["changed"] != "" {
		t.Fatalf("status write: spec %d labels %v status %+v", *d.Spec.Replicas, d.Labels, d.Status)
	}
	var got appsv1.Deployment
	e.do("GET", deployPath("default", "d")+"/status", nil).decode(t, &got)
	if got.Status.Replicas != 3 {
		t.Fatalf("GET status %+v", got.Status)
	}
}

func TestUpdateErrors(t *testing.T) {
	e := newTestEnv(t)
	var p corev1.Pod
	e.mustCreate(podPath("default", ""), testPod("p", nil), &p)
	wrongName := p.DeepCopy()
	wrongName.Name = "q"
	e.do("PUT", podPath("default", "p"), wrongName).expect(t, 400, metav1.StatusReasonBadRequest)
	missing := testPod("gone", nil)
	e.do("PUT", podPath("default", "gone"), missing).expect(t, 404, metav1.StatusReasonNotFound)
	immutable := p.DeepCopy()
	immutable.Spec.RestartPolicy = corev1.RestartPolicyNever
	e.do("PUT", podPath("default", "p"), immutable).expect(t, 422, metav1.StatusReasonInvalid)
	wrongUID := p.DeepCopy()
	wrongUID.UID = "other"
	e.do("PUT", podPath("default", "p"), wrongUID).expect(t, 409, metav1.StatusReasonConflict)
	e.do("PUT", podPath("default", ""), &p).expect(t, 405, metav1.StatusReasonMethodNotAllowed)
	// Nothing was written by the failures.
	var got corev1.Pod
	e.do("GET", podPath("default", "p"), nil).decode(t, &got)
	if got.ResourceVersion != p.ResourceVersion {
		t.Fatalf("failed updates wrote: rv %s -> %s", p.ResourceVersion, got.ResourceVersion)
	}
}

func TestUpdateCreatesEventsWhenMissing(t *testing.T) {
	e := newTestEnv(t)
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "ev1", Namespace: "default"}, Reason: "Test", Type: corev1.EventTypeNormal}
	e.do("PUT", "/api/v1/namespaces/default/events/ev1", ev).expect(t, 201, "")
	e.do("PUT", "/api/v1/namespaces/default/events/ev1", ev).expect(t, 200, "")

	// What a client read, written back after the object was deleted, is a
	// Conflict (its uid and resourceVersion are preconditions), not a
	// re-creation.
	var read corev1.Event
	e.do("GET", "/api/v1/namespaces/default/events/ev1", nil).decode(t, &read)
	e.do("DELETE", "/api/v1/namespaces/default/events/ev1", nil).expect(t, 200, "")
	r := e.do("PUT", "/api/v1/namespaces/default/events/ev1", &read)
	r.expect(t, 409, metav1.StatusReasonConflict)
	if want := "Precondition failed: UID in precondition: " + string(read.UID); !strings.Contains(r.status(t).Message, want) {
		t.Errorf("message %q, want it to contain %q", r.status(t).Message, want)
	}
	noUID := read.DeepCopy()
	noUID.UID = ""
	e.do("PUT", "/api/v1/namespaces/default/events/ev1", noUID).expect(t, 409, metav1.StatusReasonConflict)
	e.do("GET", "/api/v1/namespaces/default/events/ev1", nil).expect(t, 404, metav1.StatusReasonNotFound)
}

func TestUpdateDryRun(t *testing.T) {
	e := newTestEnv(t)
	var d appsv1.Deployment
	e.mustCreate(deployPath("default", ""), testDeployment("d", 1), &d)
	d.Spec.Replicas = ptr(int32(5))
	var answer appsv1.Deployment
	e.do("PUT", deployPath("default", "d")+"?dryRun=All", &d).decode(t, &answer)
	if *answer.Spec.Replicas != 5 {
		t.Fatalf("dry run answer %d", *answer.Spec.Replicas)
	}
	var got appsv1.Deployment
	e.do("GET", deployPath("default", "d"), nil).decode(t, &got)
	if *got.Spec.Replicas != 1 || got.ResourceVersion != d.ResourceVersion {
		t.Fatalf("dry run stored: %d %s", *got.Spec.Replicas, got.ResourceVersion)
	}
}

func TestScaleSubresource(t *testing.T) {
	e := newTestEnv(t)
	var d appsv1.Deployment
	e.mustCreate(deployPath("default", ""), testDeployment("d", 2), &d)
	var scale autoscalingv1.Scale
	e.do("GET", deployPath("default", "d")+"/scale", nil).decode(t, &scale)
	if scale.Kind != "Scale" || scale.APIVersion != "autoscaling/v1" || scale.Spec.Replicas != 2 || scale.Status.Selector != "app=d" || scale.ResourceVersion != d.ResourceVersion {
		t.Fatalf("scale %+v", scale)
	}
	scale.Spec.Replicas = 5
	e.do("PUT", deployPath("default", "d")+"/scale", &scale).decode(t, &scale)
	if scale.Spec.Replicas != 5 {
		t.Fatalf("scale update answer %+v", scale)
	}
	var got appsv1.Deployment
	e.do("GET", deployPath("default", "d"), nil).decode(t, &got)
	if *got.Spec.Replicas != 5 || got.Generation != 2 {
		t.Fatalf("deployment after scale: replicas %d generation %d", *got.Spec.Replicas, got.Generation)
	}
	// A stale scale is a conflict; negative replicas are invalid.
	scale.ResourceVersion = d.ResourceVersion
	e.do("PUT", deployPath("default", "d")+"/scale", &scale).expect(t, 409, metav1.StatusReasonConflict)
	scale.ResourceVersion = ""
	scale.Spec.Replicas = -1
	e.do("PUT", deployPath("default", "d")+"/scale", &scale).expect(t, 422, metav1.StatusReasonInvalid)
	e.do("PATCH", deployPath("default", "d")+"/scale", `{"spec":{"replicas":7}}`, "Content-Type", "application/merge-patch+json").decode(t, &scale)
	e.do("GET", deployPath("default", "d"), nil).decode(t, &got)
	if scale.Spec.Replicas != 7 || *got.Spec.Replicas != 7 {
		t.Fatalf("scale patch: scale %d deployment %d", scale.Spec.Replicas, *got.Spec.Replicas)
	}
	e.do("GET", podPath("default", "x")+"/scale", nil).expect(t, 404, metav1.StatusReasonNotFound)
}

// withStatus returns the stored deployment "d" with status.replicas set.
func withStatus(e *testEnv, replicas int32) *appsv1.Deployment {
	var d appsv1.Deployment
	e.do("GET", deployPath("default", "d"), nil).decode(e.t, &d)
	d.Status.Replicas = replicas
	return &d
}

func ptr[T any](v T) *T { return &v }
