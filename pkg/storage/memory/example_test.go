package memory_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kplane/kplane/pkg/storage"
	"github.com/kplane/kplane/pkg/storage/memory"
)

func Example() {
	b, err := memory.New(memory.Config{})
	if err != nil {
		panic(err)
	}
	defer b.Close()
	cms, err := b.Storage(storage.ResourceConfig{
		Codec:       storage.JSONCodec{},
		NewFunc:     func() runtime.Object { return &corev1.ConfigMap{} },
		NewListFunc: func() runtime.Object { return &corev1.ConfigMapList{} },
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	w, err := cms.Watch(ctx, "/configmaps/default", storage.ListOptions{Recursive: true, ResourceVersion: "1"})
	if err != nil {
		panic(err)
	}
	defer w.Stop()

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"}, Data: map[string]string{"mode": "fast"}}
	out := &corev1.ConfigMap{}
	if err := cms.Create(ctx, "/configmaps/default/settings", cm, out); err != nil {
		panic(err)
	}
	fmt.Println("created at resourceVersion", out.ResourceVersion)

	list := &corev1.ConfigMapList{}
	if err := cms.GetList(ctx, "/configmaps/default", storage.ListOptions{Recursive: true}, list); err != nil {
		panic(err)
	}
	fmt.Println("listed", len(list.Items), "at resourceVersion", list.ResourceVersion)

	e := <-w.ResultChan()
	fmt.Println("watched", e.Type, e.Object.(*corev1.ConfigMap).Name)
	// Output:
	// created at resourceVersion 2
	// listed 1 at resourceVersion 2
	// watched ADDED settings
}
