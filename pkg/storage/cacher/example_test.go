package cacher_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kplane/kplane/pkg/storage"
	"github.com/kplane/kplane/pkg/storage/cacher"
	"github.com/kplane/kplane/pkg/storage/memory"
)

// Put a watch cache in front of a backend: writes go through to it, and
// every watch of pods shares the cache's one backend watch.
func Example() {
	backend, err := memory.New(memory.Config{})
	if err != nil {
		panic(err)
	}
	defer backend.Close()
	cache, err := cacher.New(cacher.Config{Backend: backend})
	if err != nil {
		panic(err)
	}
	defer cache.Close()

	pods, err := cache.Storage(storage.ResourceConfig{
		Codec:       storage.JSONCodec{},
		NewFunc:     func() runtime.Object { return &corev1.Pod{} },
		NewListFunc: func() runtime.Object { return &corev1.PodList{} },
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	w, err := pods.Watch(ctx, "/pods", storage.ListOptions{Recursive: true})
	if err != nil {
		panic(err)
	}
	defer w.Stop()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "nginx"}}
	if err := pods.Create(ctx, "/pods/default/nginx", pod, &corev1.Pod{}); err != nil {
		panic(err)
	}
	ev := <-w.ResultChan()
	fmt.Println(ev.Type, ev.Object.(*corev1.Pod).Name)
	// Output: ADDED nginx
}
