package apiserver

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestStatusWriteStoresMetadata checks that a write through the status
// subresource stores the new status and metadata (annotations, finalizers),
// ignores the spec, keeps a deployment's labels and generation, and still
// honours the resourceVersion precondition.
func TestStatusWriteStoresMetadata(t *testing.T) {
	e := newTestEnv(t)
	var d appsv1.Deployment
	e.mustCreate(deployPath("default", ""), testDeployment("d", 1), &d)
	created := d.DeepCopy()

	d.Annotations = map[string]string{"deployment.kubernetes.io/revision": "1"}
	d.Labels = map[string]string{"app": "d", "changed": "yes"}
	d.Spec.Replicas = ptr(int32(9))
	d.Spec.Template.Spec.Containers[0].Image = "nginx:2"
	d.Generation = 7
	d.Status.Replicas = 3
	d.Status.ObservedGeneration = 1
	var out appsv1.Deployment
	e.do("PUT", deployPath("default", "d")+"/status", &d).decode(t, &out)
	var got appsv1.Deployment
	e.do("GET", deployPath("default", "d"), nil).decode(t, &got)
	for _, o := range []*appsv1.Deployment{&out, &got} {
		if o.Annotations["deployment.kubernetes.io/revision"] != "1" {
			t.Errorf("annotation written through status dropped: %v", o.Annotations)
		}
		if diff := cmp.Diff(created.Labels, o.Labels); diff != "" {
			t.Errorf("labels changed through status (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(created.Spec, o.Spec); diff != "" {
			t.Errorf("spec changed through status (-want +got):\n%s", diff)
		}
		if o.Generation != created.Generation || o.Status.Replicas != 3 || o.Status.ObservedGeneration != 1 {
			t.Errorf("generation %d status %+v", o.Generation, o.Status)
		}
		if o.UID != created.UID || !o.CreationTimestamp.Equal(&created.CreationTimestamp) {
			t.Errorf("server-owned metadata changed: uid %s created %v", o.UID, o.CreationTimestamp)
		}
	}
	if got.ResourceVersion == created.ResourceVersion {
		t.Error("status write kept the resourceVersion")
	}

	// A stale resourceVersion is a conflict and writes nothing.
	stale := created.DeepCopy()
	stale.Annotations = map[string]string{"stale": "yes"}
	stale.Status.Replicas = 8
	e.do("PUT", deployPath("default", "d")+"/status", stale).expect(t, 409, metav1.StatusReasonConflict)
	var after appsv1.Deployment
	e.do("GET", deployPath("default", "d"), nil).decode(t, &after)
	if after.ResourceVersion != got.ResourceVersion || after.Status.Replicas != 3 || after.Annotations["stale"] != "" {
		t.Errorf("conflicting status write was stored: %+v", after)
	}

	// A merge patch of /status stores annotations too, as the deployment
	// controller's revision bookkeeping relies on.
	patch := `{"metadata":{"annotations":{"note":"x"},"labels":{"l":"v"}},"spec":{"paused":true},"status":{"replicas":4}}`
	e.do("PATCH", deployPath("default", "d")+"/status", patch, "Content-Type", "application/merge-patch+json").decode(t, &out)
	if out.Annotations["note"] != "x" || out.Labels["l"] != "" || out.Spec.Paused || out.Status.Replicas != 4 || out.Generation != created.Generation {
		t.Errorf("status patch stored %+v", out)
	}

	// Renaming through status is refused like any update.
	renamed := out.DeepCopy()
	renamed.Name = "other"
	e.do("PUT", deployPath("default", "d")+"/status", renamed).expect(t, 400, metav1.StatusReasonBadRequest)
}

// TestPodStatusWriteKeepsOwnerReferences checks the pod-specific rules: the
// owner references and the spec stay, labels written through status stay.
func TestPodStatusWriteKeepsOwnerReferences(t *testing.T) {
	e := newTestEnv(t)
	p := testPod("p", map[string]string{"a": "1"})
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "u1"}}
	var created corev1.Pod
	e.mustCreate(podPath("default", ""), p, &created)

	w := created.DeepCopy()
	w.OwnerReferences = nil
	w.Labels = map[string]string{"a": "2"}
	w.Spec.NodeName = "n1"
	w.Status.Phase = corev1.PodRunning
	var out corev1.Pod
	e.do("PUT", podPath("default", "p")+"/status", w).decode(t, &out)
	if len(out.OwnerReferences) != 1 || out.OwnerReferences[0].UID != "u1" {
		t.Errorf("owner references changed through status: %v", out.OwnerReferences)
	}
	if out.Spec.NodeName != "" || out.Labels["a"] != "2" || out.Status.Phase != corev1.PodRunning {
		t.Errorf("pod status write stored node %q labels %v phase %s", out.Spec.NodeName, out.Labels, out.Status.Phase)
	}
	if out.Status.QOSClass != created.Status.QOSClass {
		t.Errorf("QoS class %q, want %q kept", out.Status.QOSClass, created.Status.QOSClass)
	}
}
