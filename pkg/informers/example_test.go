package informers_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/cache/cachetest"
	"github.com/kplane/kplane/pkg/informers"
)

// A factory shares one informer per resource; here the pods come from an
// in-memory source instead of an API server (use f.Pods() with a Client).
func ExampleFor() {
	src := cachetest.New[*corev1.Pod](cachetest.Config{})
	_, _ = src.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}})

	f, _ := informers.New(informers.Config{})
	defer f.Shutdown()
	pods, _ := informers.For(f, corev1.SchemeGroupVersion.WithResource("pods"),
		func(namespace string) cache.ListerWatcher[*corev1.Pod] { return src })

	ctx := context.Background()
	f.Start(ctx)
	if !informers.WaitForNamedCacheSync(ctx, "example", pods.HasSynced) {
		return
	}
	list, _ := pods.Lister().List(labels.Everything())
	fmt.Println(len(list), list[0].Name)
	// Output: 1 web
}
