package apiserver

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestDeleteWithoutFinalizersRemoves(t *testing.T) {
	e := newTestEnv(t)
	var d appsv1.Deployment
	e.mustCreate(deployPath("default", ""), testDeployment("d", 1), &d)
	r := e.do("DELETE", deployPath("default", "d"), nil)
	r.expect(t, 200, "")
	st := r.status(t)
	if st.Status != metav1.StatusSuccess || st.Details.Name != "d" || st.Details.UID != d.UID || st.Details.Kind != "deployments" {
		t.Fatalf("delete answer %+v", st)
	}
	e.do("GET", deployPath("default", "d"), nil).expect(t, 404, metav1.StatusReasonNotFound)
	e.do("DELETE", deployPath("default", "d"), nil).expect(t, 404, metav1.StatusReasonNotFound)
}

func TestDeletePropagationRecordsFinalizers(t *testing.T) {
	for _, tc := range []struct {
		policy    metav1.DeletionPropagation
		finalizer string
	}{
		{metav1.DeletePropagationForeground, metav1.FinalizerDeleteDependents},
		{metav1.DeletePropagationOrphan, metav1.FinalizerOrphanDependents},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			e := newTestEnv(t)
			e.mustCreate(deployPath("default", ""), testDeployment("d", 1), nil)
			r := e.do("DELETE", deployPath("default", "d"), &metav1.DeleteOptions{PropagationPolicy: &tc.policy})
			r.expect(t, 200, "")
			var d appsv1.Deployment
			r.decode(t, &d)
			if !slices.Equal(d.Finalizers, []string{tc.finalizer}) || d.DeletionTimestamp == nil || *d.DeletionGracePeriodSeconds != 0 {
				t.Fatalf("pending delete: finalizers %v deletionTimestamp %v", d.Finalizers, d.DeletionTimestamp)
			}
			// New finalizers may not be added while deleting.
			d.Finalizers = append(d.Finalizers, "example.com/new")
			e.do("PUT", deployPath("default", "d"), &d).expect(t, 422, metav1.StatusReasonInvalid)
			// Removing the last finalizer completes the deletion.
			e.do("PATCH", deployPath("default", "d"), `{"metadata":{"finalizers":null}}`, "Content-Type", "application/merge-patch+json").expect(t, 200, "")
			e.do("GET", deployPath("default", "d"), nil).expect(t, 404, metav1.StatusReasonNotFound)
		})
	}
}

func TestDeleteKeepsObjectsWithFinalizers(t *testing.T) {
	e := newTestEnv(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Finalizers: []string{"example.com/hold"}}}
	e.mustCreate("/api/v1/namespaces/default/configmaps", cm, nil)
	r := e.do("DELETE", "/api/v1/namespaces/default/configmaps/c", nil)
	r.expect(t, 200, "")
	var got corev1.ConfigMap
	e.do("GET", "/api/v1/namespaces/default/configmaps/c", nil).decode(t, &got)
	if got.DeletionTimestamp == nil || !got.DeletionTimestamp.Time.Equal(e.clock.Now().Truncate(time.Second)) {
		t.Fatalf("deletionTimestamp %v", got.DeletionTimestamp)
	}
	// A second delete changes nothing.
	e.do("DELETE", "/api/v1/namespaces/default/configmaps/c", nil).expect(t, 200, "")
	var again corev1.ConfigMap
	e.do("GET", "/api/v1/namespaces/default/configmaps/c", nil).decode(t, &again)
	if again.ResourceVersion != got.ResourceVersion {
		t.Errorf("second delete wrote")
	}
	got.Finalizers = nil
	e.do("PUT", "/api/v1/namespaces/default/configmaps/c", &got).expect(t, 200, "")
	e.do("GET", "/api/v1/namespaces/default/configmaps/c", nil).expect(t, 404, metav1.StatusReasonNotFound)
}

func TestDeleteBoundPodIsGraceful(t *testing.T) {
	e := newTestEnv(t)
	pod := testPod("p", nil)
	pod.Spec.NodeName = "node-1"
	e.mustCreate(podPath("default", ""), pod, nil)
	r := e.do("DELETE", podPath("default", "p"), nil)
	r.expect(t, 200, "")
	var got corev1.Pod
	r.decode(t, &got)
	want := e.clock.Now().Add(30 * time.Second)
	if got.DeletionTimestamp == nil || !got.DeletionTimestamp.Time.Equal(want.Truncate(time.Second)) || *got.DeletionGracePeriodSeconds != 30 {
		t.Fatalf("graceful delete: %v %v", got.DeletionTimestamp, got.DeletionGracePeriodSeconds)
	}
	// A shorter grace period moves the deadline forward.
	r = e.do("DELETE", podPath("default", "p")+"?gracePeriodSeconds=5", nil)
	r.decode(t, &got)
	if *got.DeletionGracePeriodSeconds != 5 {
		t.Fatalf("shorter grace: %v", *got.DeletionGracePeriodSeconds)
	}
	// The node agent's final delete with grace 0 removes it.
	e.do("DELETE", podPath("default", "p")+"?gracePeriodSeconds=0", nil).expect(t, 200, "")
	e.do("GET", podPath("default", "p"), nil).expect(t, 404, metav1.StatusReasonNotFound)

	// Unbound pods go at once.
	e.mustCreate(podPath("default", ""), testPod("unbound", nil), nil)
	e.do("DELETE", podPath("default", "unbound"), nil).expect(t, 200, "")
	e.do("GET", podPath("default", "unbound"), nil).expect(t, 404, metav1.StatusReasonNotFound)
}

func TestDeletePreconditionsAndDryRun(t *testing.T) {
	e := newTestEnv(t)
	var p corev1.Pod
	e.mustCreate(podPath("default", ""), testPod("p", nil), &p)
	wrongUID := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr(types.UID("nope"))}}
	e.do("DELETE", podPath("default", "p"), &wrongUID).expect(t, 409, metav1.StatusReasonConflict)
	wrongRV := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: ptr("1")}}
	e.do("DELETE", podPath("default", "p"), &wrongRV).expect(t, 409, metav1.StatusReasonConflict)
	e.do("DELETE", podPath("default", "p")+"?dryRun=All", nil).expect(t, 200, "")
	e.do("GET", podPath("default", "p"), nil).expect(t, 200, "")
	bad := metav1.DeletionPropagation("Sideways")
	e.do("DELETE", podPath("default", "p"), &metav1.DeleteOptions{PropagationPolicy: &bad}).expect(t, 422, metav1.StatusReasonInvalid)
	right := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID, ResourceVersion: &p.ResourceVersion}}
	e.do("DELETE", podPath("default", "p"), &right).expect(t, 200, "")
	e.do("GET", podPath("default", "p"), nil).expect(t, 404, metav1.StatusReasonNotFound)
}

func TestDeleteCollection(t *testing.T) {
	e := newTestEnv(t)
	for _, name := range []string{"a", "b", "c"} {
		tier := "fe"
		if name == "c" {
			tier = "be"
		}
		e.mustCreate(podPath("default", ""), testPod(name, map[string]string{"tier": tier}), nil)
	}
	r := e.do("DELETE", podPath("default", "")+"?labelSelector=tier%3Dfe", nil)
	r.expect(t, 200, "")
	var deleted corev1.PodList
	r.decode(t, &deleted)
	if len(deleted.Items) != 2 || deleted.Kind != "PodList" {
		t.Fatalf("deleted %d items (%s)", len(deleted.Items), deleted.Kind)
	}
	var left corev1.PodList
	e.do("GET", podPath("default", ""), nil).decode(t, &left)
	if len(left.Items) != 1 || left.Items[0].Name != "c" {
		t.Fatalf("left %+v", left.Items)
	}
}

func TestDeleteNamespace(t *testing.T) {
	e := newTestEnv(t)
	for _, name := range []string{"default", "kube-system", "kube-public"} {
		e.do("DELETE", "/api/v1/namespaces/"+name, nil).expect(t, 403, metav1.StatusReasonForbidden)
	}
	e.do("DELETE", "/api/v1/namespaces", nil).expect(t, 405, metav1.StatusReasonMethodNotAllowed)
	var created corev1.Namespace
	e.mustCreate("/api/v1/namespaces", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, &created)
	if !slices.Equal(created.Spec.Finalizers, []corev1.FinalizerName{corev1.FinalizerKubernetes}) {
		t.Fatalf("new namespace spec.finalizers %v", created.Spec.Finalizers)
	}
	e.mustCreate(podPath("team", ""), testPod("p", nil), nil)

	// DELETE only marks the namespace Terminating; its content stays for
	// the namespace controller.
	r := e.do("DELETE", "/api/v1/namespaces/team", nil)
	r.expect(t, 200, "")
	var ns corev1.Namespace
	r.decode(t, &ns)
	if ns.Status.Phase != corev1.NamespaceTerminating || ns.DeletionTimestamp == nil || ns.Kind != "Namespace" {
		t.Fatalf("deleted namespace %+v %+v", ns.TypeMeta, ns.Status)
	}
	e.do("GET", podPath("team", "p"), nil).expect(t, 200, "")
	// Deleting again changes nothing while the finalizer holds it.
	var again corev1.Namespace
	e.do("DELETE", "/api/v1/namespaces/team", nil).decode(t, &again)
	if again.ResourceVersion != ns.ResourceVersion || !again.DeletionTimestamp.Equal(ns.DeletionTimestamp) {
		t.Fatalf("second delete rewrote the namespace: %v -> %v", ns.ResourceVersion, again.ResourceVersion)
	}
	// A plain update cannot drop spec.finalizers; only finalize can.
	upd := again.DeepCopy()
	upd.Spec.Finalizers = nil
	var kept corev1.Namespace
	e.do("PUT", "/api/v1/namespaces/team", upd).decode(t, &kept)
	if len(kept.Spec.Finalizers) != 1 {
		t.Fatalf("update changed spec.finalizers to %v", kept.Spec.Finalizers)
	}
	e.do("GET", "/api/v1/namespaces/team", nil).expect(t, 200, "")

	// Finalizing with no finalizers left deletes it.
	fin := kept.DeepCopy()
	fin.Spec.Finalizers = nil
	fin.Labels = map[string]string{"ignored": "yes"}
	var last corev1.Namespace
	r = e.do("PUT", "/api/v1/namespaces/team/finalize", fin)
	r.expect(t, 200, "")
	r.decode(t, &last)
	if len(last.Spec.Finalizers) != 0 || last.Labels["ignored"] != "" {
		t.Fatalf("finalize answer %+v %v", last.Spec, last.Labels)
	}
	e.do("GET", "/api/v1/namespaces/team", nil).expect(t, 404, metav1.StatusReasonNotFound)
}

func TestFinalizeNamespace(t *testing.T) {
	e := newTestEnv(t)
	var ns corev1.Namespace
	e.mustCreate("/api/v1/namespaces", &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: "team", Finalizers: []string{"example.com/hold"}},
		Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"example.com/spec"}},
	}, &ns)
	if want := []corev1.FinalizerName{"example.com/spec", corev1.FinalizerKubernetes}; !slices.Equal(ns.Spec.Finalizers, want) {
		t.Fatalf("spec.finalizers %v, want %v", ns.Spec.Finalizers, want)
	}
	for _, method := range []string{"GET", "POST", "PATCH", "DELETE"} {
		e.do(method, "/api/v1/namespaces/team/finalize", nil).expect(t, 405, metav1.StatusReasonMethodNotAllowed)
	}
	e.do("PUT", "/api/v1/pods/finalize", &ns).expect(t, 404, metav1.StatusReasonNotFound)

	bad := ns.DeepCopy()
	bad.Spec.Finalizers = []corev1.FinalizerName{"nodomain"}
	e.do("PUT", "/api/v1/namespaces/team/finalize", bad).expect(t, 422, metav1.StatusReasonInvalid)
	stale := ns.DeepCopy()
	stale.ResourceVersion = "1"
	e.do("PUT", "/api/v1/namespaces/team/finalize", stale).expect(t, 409, metav1.StatusReasonConflict)

	// Finalizing an Active namespace only changes spec.finalizers.
	fin := ns.DeepCopy()
	fin.Spec.Finalizers = []corev1.FinalizerName{"example.com/spec"}
	e.do("PUT", "/api/v1/namespaces/team/finalize", fin).decode(t, &ns)
	if !slices.Equal(ns.Spec.Finalizers, fin.Spec.Finalizers) || ns.Status.Phase != corev1.NamespaceActive {
		t.Fatalf("finalized %+v %+v", ns.Spec, ns.Status)
	}

	e.do("DELETE", "/api/v1/namespaces/team", nil).decode(t, &ns)
	// The spec finalizer gone, metadata.finalizers still hold it.
	ns.Spec.Finalizers = nil
	e.do("PUT", "/api/v1/namespaces/team/finalize", &ns).decode(t, &ns)
	e.do("GET", "/api/v1/namespaces/team", nil).expect(t, 200, "")
	// A DELETE now waits on metadata.finalizers like any object.
	e.do("DELETE", "/api/v1/namespaces/team", nil).decode(t, &ns)
	if ns.Status.Phase != corev1.NamespaceTerminating {
		t.Fatalf("phase %v", ns.Status.Phase)
	}
	e.do("PATCH", "/api/v1/namespaces/team", `{"metadata":{"finalizers":null}}`, "Content-Type", "application/merge-patch+json").expect(t, 200, "")
	e.do("GET", "/api/v1/namespaces/team", nil).expect(t, 404, metav1.StatusReasonNotFound)
}

func TestDeleteBoundPodWithFinalizer(t *testing.T) {
	e := newTestEnv(t)
	pod := testPod("p", nil)
	pod.Spec.NodeName = "node-1"
	pod.Finalizers = []string{"example.com/hold"}
	e.mustCreate(podPath("default", ""), pod, nil)
	e.do("DELETE", podPath("default", "p"), nil).expect(t, 200, "")
	// The node agent's final delete cannot remove it while the finalizer holds it.
	e.do("DELETE", podPath("default", "p")+"?gracePeriodSeconds=0", nil).expect(t, 200, "")
	var got corev1.Pod
	e.do("GET", podPath("default", "p"), nil).decode(t, &got)
	if got.DeletionGracePeriodSeconds == nil || *got.DeletionGracePeriodSeconds != 0 || !got.DeletionTimestamp.Time.Equal(e.clock.Now().Truncate(time.Second)) {
		t.Fatalf("after final delete: %v %v", got.DeletionTimestamp, got.DeletionGracePeriodSeconds)
	}
	// Removing the finalizer completes the deletion.
	e.do("PATCH", podPath("default", "p"), `{"metadata":{"finalizers":null}}`, "Content-Type", "application/merge-patch+json").expect(t, 200, "")
	e.do("GET", podPath("default", "p"), nil).expect(t, 404, metav1.StatusReasonNotFound)
}

func TestTerminatingNamespaceRefusesContent(t *testing.T) {
	e := newTestEnv(t)
	e.mustCreate("/api/v1/namespaces", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}}}, nil)
	r := e.do("DELETE", "/api/v1/namespaces/held", nil)
	r.expect(t, 200, "")
	var ns corev1.Namespace
	r.decode(t, &ns)
	if ns.Status.Phase != corev1.NamespaceTerminating || ns.DeletionTimestamp == nil {
		t.Fatalf("namespace %+v", ns.Status)
	}
	r = e.do("POST", podPath("held", ""), testPod("p", nil))
	r.expect(t, 403, metav1.StatusReasonForbidden)
	st := r.status(t)
	if len(st.Details.Causes) != 1 || st.Details.Causes[0].Type != corev1.NamespaceTerminatingCause {
		t.Errorf("causes %+v", st.Details.Causes)
	}
	if want := `pods "p" is forbidden: unable to create new content in namespace held because it is being terminated`; st.Message != want {
		t.Errorf("message %q, want %q", st.Message, want)
	}
}
