package controller_test

import (
	"context"
	"fmt"
	"log/slog"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kplane/kplane/pkg/controller"
	"github.com/kplane/kplane/pkg/workqueue"
)

// A controller drains a rate-limited queue of keys into a sync handler. In
// a real controller informer event handlers (controller.EnqueueHandler)
// fill the queue and CacheSyncs holds their HasSynced.
func Example() {
	queue, err := workqueue.NewRateLimiting(workqueue.RateLimitingConfig[string]{})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c, err := controller.New(controller.Config{
		Name:  "example",
		Queue: queue,
		SyncHandler: func(ctx context.Context, key string) error {
			fmt.Println("synced", key)
			cancel() // stop after one key, for the example
			return nil
		},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	c.Enqueue(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}})
	if err := c.Run(ctx, 2); err != nil {
		panic(err)
	}
	// Output: synced default/web
}

// Expectations hold a key back until the informer has observed the writes
// the controller issued for it.
func ExampleExpectations() {
	exp, err := controller.NewExpectations(controller.ExpectationsConfig{})
	if err != nil {
		panic(err)
	}
	exp.ExpectCreations("default/web", 2) // about to create two pods
	fmt.Println(exp.SatisfiedExpectations("default/web"))
	exp.CreationObserved("default/web") // pod add events arrive
	exp.CreationObserved("default/web")
	fmt.Println(exp.SatisfiedExpectations("default/web"))
	// Output:
	// false
	// true
}

// A RefManager adopts a matching orphan with a patch that carries the
// object's uid as a precondition.
func ExampleRefManager() {
	owner := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "rs-uid"}}
	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "default", Name: "web-1", UID: "pod-uid", Labels: map[string]string{"app": "web"},
	}}
	claimed, err := controller.ClaimPods(context.Background(), controller.RefManagerConfig[*corev1.Pod]{
		Owner:     owner,
		OwnerKind: appsv1.SchemeGroupVersion.WithKind("ReplicaSet"),
		Selector:  labels.SelectorFromSet(labels.Set{"app": "web"}),
		Patcher: controller.PatcherFunc(func(_ context.Context, ns, name string, pt types.PatchType, data []byte) error {
			fmt.Printf("%s %s/%s %s\n", pt, ns, name, data)
			return nil
		}),
		// A live read of the owner, bypassing the cache.
		GetOwner: func(context.Context) (metav1.Object, error) { return owner, nil },
		Logger:   slog.New(slog.DiscardHandler),
	}, []*corev1.Pod{orphan})
	if err != nil {
		panic(err)
	}
	fmt.Println("claimed", len(claimed))
	// Output:
	// application/strategic-merge-patch+json default/web-1 {"metadata":{"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web","uid":"rs-uid","controller":true,"blockOwnerDeletion":true}],"uid":"pod-uid"}}
	// claimed 1
}
