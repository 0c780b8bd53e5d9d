package controller

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kplane/kplane/pkg/workqueue"
)

// BenchmarkProcessNextWorkItem measures the loop's own overhead per key on
// the real rate-limited queue: Add, Get, handler, Forget, Done.
func BenchmarkProcessNextWorkItem(b *testing.B) {
	q, err := workqueue.NewRateLimiting(workqueue.RateLimitingConfig[string]{})
	if err != nil {
		b.Fatal(err)
	}
	defer q.ShutDown()
	c, err := New(Config{Name: "bench", Queue: q, Logger: slog.New(slog.DiscardHandler),
		SyncHandler: func(context.Context, string) error { return nil }})
	if err != nil {
		b.Fatal(err)
	}
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = fmt.Sprintf("ns/obj-%d", i)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c.EnqueueKey(keys[i%len(keys)])
		c.processNextWorkItem(ctx)
	}
}

// BenchmarkExpectations measures the observe/check pair event handlers and
// workers run concurrently.
func BenchmarkExpectations(b *testing.B) {
	e, err := NewExpectations(ExpectationsConfig{})
	if err != nil {
		b.Fatal(err)
	}
	keys := make([]string, 64)
	for i := range keys {
		keys[i] = fmt.Sprintf("ns/rs-%d", i)
		e.ExpectCreations(keys[i], 1<<30)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			k := keys[i%len(keys)]
			e.CreationObserved(k)
			e.SatisfiedExpectations(k)
			i++
		}
	})
}

// BenchmarkClaimOwned measures a claim pass over 100 pods the owner already
// controls, the common case of every ReplicaSet sync: no writes.
func BenchmarkClaimOwned(b *testing.B) {
	tr := true
	owner := ownerRS("owner-uid", false)
	pods := make([]*corev1.Pod, 100)
	for i := range pods {
		pods[i] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: fmt.Sprintf("p-%d", i), Labels: matching,
			OwnerReferences: []metav1.OwnerReference{{UID: "owner-uid", Controller: &tr}},
		}}
	}
	cfg := RefManagerConfig[*corev1.Pod]{
		Owner: owner, OwnerKind: rsKind, Selector: labels.SelectorFromSet(matching), Logger: discard,
		Patcher:  PatcherFunc(func(context.Context, string, string, types.PatchType, []byte) error { return nil }),
		GetOwner: func(context.Context) (metav1.Object, error) { return owner, nil },
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		claimed, err := ClaimPods(ctx, cfg, pods)
		if err != nil || len(claimed) != len(pods) {
			b.Fatalf("claimed %d, %v", len(claimed), err)
		}
	}
}
