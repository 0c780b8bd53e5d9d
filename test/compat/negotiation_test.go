package compat

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// TestProtobufPreferringClient runs client-go configured as kubectl and
// the controller manager are: protobuf request bodies, and an Accept header
// preferring protobuf over JSON. kplane answers protobuf, as
// kube-apiserver does, for objects, lists and watch streams (the
// responses' Content-Types are checked by TestProtobufClientset).
func TestProtobufPreferringClient(t *testing.T) {
	ctx := context.Background()
	srv := startServer(t)
	cfg := srv.restConfig()
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pods := cs.CoreV1().Pods("default")
	w, err := pods.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()
	created, err := pods.Create(ctx, pod("pb", map[string]string{"a": "b"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.Labels["a"] != "b" || created.UID == "" {
		t.Errorf("created = %+v", created.ObjectMeta)
	}
	if ev := nextEvent(t, w); ev.Type != watch.Added {
		t.Errorf("watch: %s", ev.Type)
	}
	created.Labels["a"] = "c"
	if _, err := pods.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update: %v", err)
	}
	if l, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "a=c"}); err != nil || len(l.Items) != 1 {
		t.Fatalf("list: %v, %v", l, err)
	}
	if err := pods.Delete(ctx, "pb", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
}
