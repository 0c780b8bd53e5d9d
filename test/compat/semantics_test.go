package compat

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// TestDeletionSemantics checks, through client-go, the delete rules that
// controllers and node agents depend on: finalizers hold an object with a
// deletionTimestamp until they are removed, a pod bound to a node is
// deleted gracefully, and namespaced objects need their namespace.
func TestDeletionSemantics(t *testing.T) {
	ctx := context.Background()
	srv := startServer(t)
	cs := srv.clientset(t)
	cms := cs.CoreV1().ConfigMaps("default")

	t.Run("finalizer", func(t *testing.T) {
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := cms.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=held", ResourceVersion: cm.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		if err := cms.Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		got, err := cms.Get(ctx, "held", metav1.GetOptions{})
		if err != nil || got.DeletionTimestamp == nil {
			t.Fatalf("after delete with a finalizer: %v, %v; want the object with a deletionTimestamp", got, err)
		}
		if ev := nextEvent(t, w); ev.Type != watch.Modified {
			t.Errorf("watch after delete with a finalizer: %s, want MODIFIED", ev.Type)
		}
		if _, err := cms.Patch(ctx, "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		if ev := nextEvent(t, w); ev.Type != watch.Deleted {
			t.Errorf("watch after the last finalizer went: %s, want DELETED", ev.Type)
		}
		if _, err := cms.Get(ctx, "held", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("get after the last finalizer went: %v, want NotFound", err)
		}
	})

	t.Run("bound pod is deleted gracefully", func(t *testing.T) {
		pods := cs.CoreV1().Pods("default")
		p := pod("bound", nil)
		p.Spec.NodeName = "node-1"
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := pods.Delete(ctx, "bound", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		got, err := pods.Get(ctx, "bound", metav1.GetOptions{})
		if err != nil || got.DeletionTimestamp == nil || got.DeletionGracePeriodSeconds == nil {
			t.Fatalf("bound pod after delete: %v, %v; want it terminating", got, err)
		}
		// The node agent confirms with a zero grace period.
		if err := pods.Delete(ctx, "bound", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
		if _, err := pods.Get(ctx, "bound", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("bound pod after a zero-grace delete: %v, want NotFound", err)
		}
	})

	t.Run("namespace must exist", func(t *testing.T) {
		_, err := cs.CoreV1().ConfigMaps("nowhere").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("create in a missing namespace: %v, want NotFound", err)
		}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "nowhere"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().ConfigMaps("nowhere").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{}); err != nil {
			t.Errorf("create once the namespace exists: %v", err)
		}
	})

	t.Run("orphan and background record their finalizers", func(t *testing.T) {
		deps := cs.AppsV1().Deployments("default")
		if _, err := deps.Create(ctx, deployment("orphaned", 1), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := deps.Delete(ctx, "orphaned", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)}); err != nil {
			t.Fatal(err)
		}
		got, err := deps.Get(ctx, "orphaned", metav1.GetOptions{})
		if err != nil || got.DeletionTimestamp == nil || !hasString(got.Finalizers, metav1.FinalizerOrphanDependents) {
			t.Errorf("orphan delete: %v, %v; want the orphan finalizer", got, err)
		}
		if _, err := deps.Create(ctx, deployment("background", 1), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := deps.Delete(ctx, "background", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
			t.Fatal(err)
		}
		if _, err := deps.Get(ctx, "background", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("background delete: %v, want the object gone at once", err)
		}
	})
}
