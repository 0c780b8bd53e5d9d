package compat

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNamespaceDeletion checks, through client-go, the two-step deletion of
// a namespace: DELETE marks it Terminating and keeps its content, creates
// in it are refused, and client-go's Namespaces().Finalize removing the
// "kubernetes" finalizer lets it go.
func TestNamespaceDeletion(t *testing.T) {
	ctx := context.Background()
	srv := startServer(t)
	cs := srv.clientset(t)
	nss := cs.CoreV1().Namespaces()

	ns, err := nss.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ns.Spec.Finalizers, []corev1.FinalizerName{corev1.FinalizerKubernetes}) {
		t.Fatalf("spec.finalizers %v, want [kubernetes]", ns.Spec.Finalizers)
	}
	cms := cs.CoreV1().ConfigMaps("team")
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := nss.Delete(ctx, "team", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ns, err = nss.Get(ctx, "team", metav1.GetOptions{})
	if err != nil || ns.DeletionTimestamp == nil || ns.Status.Phase != corev1.NamespaceTerminating {
		t.Fatalf("after delete: %v, %v; want a Terminating namespace", ns, err)
	}
	if _, err := cms.Get(ctx, "kept", metav1.GetOptions{}); err != nil {
		t.Errorf("content after the namespace delete: %v, want it kept for the namespace controller", err)
	}
	_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		t.Errorf("create in a Terminating namespace: %v, want Forbidden with a NamespaceTerminating cause", err)
	}

	if err := cms.Delete(ctx, "kept", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ns.Spec.Finalizers = nil
	if _, err := nss.Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := nss.Get(ctx, "team", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace after finalize: %v, want NotFound", err)
	}
}
