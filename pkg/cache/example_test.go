package cache_test

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/cache/cachetest"
)

// An informer over an in-memory source: handlers hear about changes, the
// lister reads the cache.
func ExampleSharedIndexInformer() {
	src := cachetest.New[*corev1.Pod](cachetest.Config{})
	_, _ = src.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}})

	inf, err := cache.NewSharedIndexInformer(cache.InformerConfig[*corev1.Pod]{ListerWatcher: src, Logger: quiet})
	if err != nil {
		panic(err)
	}
	added := make(chan string, 1)
	reg, _ := inf.AddEventHandler(cache.HandlerFuncs[*corev1.Pod]{
		AddFunc: func(p *corev1.Pod, initial bool) { added <- fmt.Sprintf("%s initial=%v", p.Name, initial) },
		DeleteFunc: func(obj any) {
			if p, err := cache.Unwrap[*corev1.Pod](obj); err == nil {
				fmt.Println("deleted", p.Name)
			}
		},
	}, cache.HandlerOptions{})

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { inf.Run(ctx) })
	fmt.Println("added", <-added)
	if !cache.WaitForCacheSync(ctx, reg.HasSynced) {
		panic("not synced")
	}
	pods, _ := inf.Lister().Namespace("default").List(labels.Everything())
	fmt.Println("cached", len(pods))
	cancel()
	wg.Wait()
	// Output:
	// added web initial=true
	// cached 1
}
