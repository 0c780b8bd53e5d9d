package compat

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
)

// TestDynamicClient drives kplane with client-go's dynamic client, which
// reads and writes untyped JSON (as kubectl and garbage collectors do).
func TestDynamicClient(t *testing.T) {
	ctx := context.Background()
	srv := startServer(t)
	dc, err := dynamic.NewForConfig(srv.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	deps := dc.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace("default")
	labels := map[string]any{"app": "dyn"}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "dyn"},
		"spec": map[string]any{
			"replicas": int64(2),
			"selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}},
			},
		},
	}}
	created, err := deps.Create(ctx, u, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.GetUID() == "" || created.GetGeneration() != 1 || created.GetKind() != "Deployment" || created.GetAPIVersion() != "apps/v1" {
		t.Errorf("created: uid %q generation %d kind %q apiVersion %q", created.GetUID(), created.GetGeneration(), created.GetKind(), created.GetAPIVersion())
	}
	list, err := deps.List(ctx, metav1.ListOptions{LabelSelector: "!missing"})
	if err != nil || len(list.Items) != 1 || list.GetResourceVersion() == "" {
		t.Fatalf("list: %v, %v", list, err)
	}
	w, err := deps.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	scale, err := deps.Get(ctx, "dyn", metav1.GetOptions{}, "scale")
	if err != nil || scale.GetKind() != "Scale" {
		t.Fatalf("get scale: %v, %v", scale, err)
	}
	if r, _, _ := unstructured.NestedInt64(scale.Object, "spec", "replicas"); r != 2 {
		t.Errorf("scale replicas = %d, want 2", r)
	}
	if err := unstructured.SetNestedField(created.Object, int64(3), "spec", "replicas"); err != nil {
		t.Fatal(err)
	}
	updated, err := deps.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil || updated.GetGeneration() != 2 {
		t.Fatalf("update: %v, %v", updated, err)
	}
	if _, err := deps.Update(ctx, created, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("stale update: %v, want Conflict", err)
	}
	if ev := nextEvent(t, w); ev.Type != watch.Modified || ev.Object.(*unstructured.Unstructured).GetResourceVersion() != updated.GetResourceVersion() {
		t.Errorf("watch: %s", ev.Type)
	}
	if err := deps.Delete(ctx, "dyn", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if ev := nextEvent(t, w); ev.Type != watch.Deleted {
		t.Errorf("watch after delete: %s", ev.Type)
	}
}
