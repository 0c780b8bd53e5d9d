package etcd_test

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kplane/kplane/pkg/storage"
	"github.com/kplane/kplane/pkg/storage/etcd"
)

// Start an etcd member inside the process, store a Pod in it, and read it back.
func Example() {
	dir, err := os.MkdirTemp("", "kplane-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	member, err := etcd.StartEmbedded(ctx, etcd.EmbeddedConfig{DataDir: dir})
	if err != nil {
		panic(err)
	}
	defer member.Close()
	backend, err := etcd.New(etcd.Config{Client: member.Client()})
	if err != nil {
		panic(err)
	}
	defer backend.Close()

	pods, err := backend.Storage(storage.ResourceConfig{
		Codec:       storage.JSONCodec{},
		NewFunc:     func() runtime.Object { return &corev1.Pod{} },
		NewListFunc: func() runtime.Object { return &corev1.PodList{} },
	})
	if err != nil {
		panic(err)
	}
	created := &corev1.Pod{}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "nginx"}}
	if err := pods.Create(ctx, "/pods/default/nginx", pod, created); err != nil {
		panic(err)
	}
	got := &corev1.Pod{}
	if err := pods.Get(ctx, "/pods/default/nginx", storage.GetOptions{}, got); err != nil {
		panic(err)
	}
	fmt.Println(got.Namespace+"/"+got.Name, got.ResourceVersion == created.ResourceVersion)
	// Output: default/nginx true
}
