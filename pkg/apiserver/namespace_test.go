package apiserver

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDeleteNamespaceDryRun(t *testing.T) {
	e := newTestEnv(t)
	var ns corev1.Namespace
	e.mustCreate("/api/v1/namespaces", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, &ns)
	var dry corev1.Namespace
	e.do("DELETE", "/api/v1/namespaces/team?dryRun=All", nil).decode(t, &dry)
	if dry.Status.Phase != corev1.NamespaceTerminating || dry.DeletionTimestamp == nil {
		t.Fatalf("dry-run answer %+v %v", dry.Status, dry.DeletionTimestamp)
	}
	var got corev1.Namespace
	e.do("GET", "/api/v1/namespaces/team", nil).decode(t, &got)
	if got.ResourceVersion != ns.ResourceVersion || got.DeletionTimestamp != nil || got.Status.Phase != corev1.NamespaceActive {
		t.Fatalf("dry run changed the namespace: %+v", got)
	}
	// A dry-run finalize stores nothing either.
	fin := got.DeepCopy()
	fin.Spec.Finalizers = nil
	var dryFin corev1.Namespace
	e.do("PUT", "/api/v1/namespaces/team/finalize?dryRun=All", fin).decode(t, &dryFin)
	if len(dryFin.Spec.Finalizers) != 0 {
		t.Fatalf("dry-run finalize answer %v", dryFin.Spec.Finalizers)
	}
	e.do("GET", "/api/v1/namespaces/team", nil).decode(t, &got)
	if len(got.Spec.Finalizers) != 1 {
		t.Fatalf("dry-run finalize stored %v", got.Spec.Finalizers)
	}
}

func TestDeleteNamespaceRecordsPropagation(t *testing.T) {
	e := newTestEnv(t)
	e.mustCreate("/api/v1/namespaces", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, nil)
	var ns corev1.Namespace
	e.do("DELETE", "/api/v1/namespaces/team?propagationPolicy=Orphan", nil).decode(t, &ns)
	if !slices.Equal(ns.Finalizers, []string{metav1.FinalizerOrphanDependents}) || ns.Status.Phase != corev1.NamespaceTerminating {
		t.Fatalf("orphan delete: finalizers %v phase %v", ns.Finalizers, ns.Status.Phase)
	}
	// Finalized, the orphan finalizer still holds it.
	ns.Spec.Finalizers = nil
	e.do("PUT", "/api/v1/namespaces/team/finalize", &ns).decode(t, &ns)
	e.do("GET", "/api/v1/namespaces/team", nil).expect(t, 200, "")
	// Removing it (as the garbage collector does) lets the namespace go.
	e.do("PATCH", "/api/v1/namespaces/team", `{"metadata":{"finalizers":null}}`, "Content-Type", "application/merge-patch+json").expect(t, 200, "")
	e.do("GET", "/api/v1/namespaces/team", nil).expect(t, 404, metav1.StatusReasonNotFound)
}

// Watchers see the namespace turn Terminating, then one DELETED event when
// it is finalized: no MODIFIED event with no finalizers before it.
func TestFinalizeNamespaceWatch(t *testing.T) {
	e := newTestEnv(t)
	var ns corev1.Namespace
	e.mustCreate("/api/v1/namespaces", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, &ns)
	w := e.watch("/api/v1/namespaces?watch=true&fieldSelector=metadata.name%3Dteam&resourceVersion=" + ns.ResourceVersion)
	e.do("DELETE", "/api/v1/namespaces/team", nil).decode(t, &ns)
	w.expectEvent(t, "MODIFIED", "team")
	ns.Spec.Finalizers = nil
	e.do("PUT", "/api/v1/namespaces/team/finalize", &ns).expect(t, 200, "")
	w.expectEvent(t, "DELETED", "team")
}

func TestDiscoveryListsFinalize(t *testing.T) {
	e := newTestEnv(t)
	var list metav1.APIResourceList
	e.do("GET", "/api/v1", nil).decode(t, &list)
	i := slices.IndexFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "namespaces/finalize" })
	if i < 0 {
		t.Fatal("discovery lacks namespaces/finalize")
	}
	if r := list.APIResources[i]; r.Namespaced || r.Kind != "Namespace" || !slices.Equal(r.Verbs, []string{"update"}) {
		t.Errorf("namespaces/finalize %+v", r)
	}
}
