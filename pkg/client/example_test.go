package client_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kplane/kplane/pkg/apiserver"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/storage/memory"
)

// ExampleNewResource creates, reads and watches pods on a kplane API server.
func ExampleNewResource() {
	ctx := context.Background()
	backend, _ := memory.New(memory.Config{})
	defer backend.Close()
	srv, _ := apiserver.New(apiserver.Config{Backend: backend})
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	defer hs.CloseClientConnections()

	c, err := client.New(client.Config{Host: hs.URL})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.CloseIdleConnections()
	pods := client.NewResource(c, client.Pods).Namespace("default")

	w, err := pods.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Stop()

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx"}}},
	}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	for ev := range w.ResultChan() {
		if ev.Type != watch.Bookmark {
			fmt.Println(ev.Type, ev.Object.Namespace, ev.Object.Name)
			break
		}
	}

	_, err = pods.Get(ctx, "db", metav1.GetOptions{})
	fmt.Println(apierrors.IsNotFound(err), err)
	// Output:
	// ADDED default web
	// true pods "db" not found
}

// ExampleLoadKubeconfig connects to the current context of a kubeconfig.
func ExampleLoadKubeconfig() {
	dir, _ := os.MkdirTemp("", "kubeconfig")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "config")
	_ = os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: local
  cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}
users:
- name: admin
  user: {token: secret}
contexts:
- name: dev
  context: {cluster: local, user: admin, namespace: team-a}
`), 0o600)

	k, err := client.LoadKubeconfig(client.KubeconfigOptions{Path: path})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(k.Context, k.Config.Host, k.Namespace)
	c, err := client.New(k.Config)
	fmt.Println(c != nil, err)
	// Output:
	// dev https://127.0.0.1:6443 team-a
	// true <nil>
}

// ExampleResourceClient_Apply creates and changes a ConfigMap by
// server-side apply, and shows the conflict a second manager meets.
func ExampleResourceClient_Apply() {
	ctx := context.Background()
	backend, _ := memory.New(memory.Config{})
	defer backend.Close()
	srv, _ := apiserver.New(apiserver.Config{Backend: backend})
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	defer hs.CloseClientConnections()
	c, err := client.New(client.Config{Host: hs.URL})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.CloseIdleConnections()
	cms := client.NewResource(c, client.ConfigMaps).Namespace("default")

	// The configuration holds only the fields its manager cares about.
	config := map[string]any{
		"metadata": map[string]any{"name": "settings"},
		"data":     map[string]any{"mode": "fast"},
	}
	cm, err := cms.Apply(ctx, config, client.ApplyOptions{FieldManager: "deployer"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cm.Name, cm.Data["mode"], cm.ManagedFields[0].Manager)

	// Another manager setting the same field to another value conflicts,
	// unless it forces.
	config["data"] = map[string]any{"mode": "slow"}
	_, err = cms.Apply(ctx, config, client.ApplyOptions{FieldManager: "operator"})
	fmt.Println(apierrors.IsConflict(err), err)
	cm, err = cms.Apply(ctx, config, client.ApplyOptions{FieldManager: "operator", Force: true})
	fmt.Println(cm.Data["mode"], err)
	// Output:
	// settings fast deployer
	// true Apply failed with 1 conflict: conflict with "deployer": .data.mode
	// slow <nil>
}
