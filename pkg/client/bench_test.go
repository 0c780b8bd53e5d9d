package client_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/storage/memory"
)

// These benchmarks measure pkg/client and the kplane API server together,
// over loopback HTTP on a memory backend: requests per second for create,
// get and list, and watch fan-out.

func BenchmarkCreate(b *testing.B) {
	ctx := context.Background()
	pods := client.NewResource(startServer(b, memory.Config{}), client.Pods).Namespace("default")
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := pods.Create(ctx, newPod("p-"+strconv.Itoa(i), nil), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

func BenchmarkGet(b *testing.B) {
	ctx := context.Background()
	pods := client.NewResource(startServer(b, memory.Config{}), client.Pods).Namespace("default")
	if _, err := pods.Create(ctx, newPod("p", nil), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := pods.Get(ctx, "p", metav1.GetOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

// createPods creates n pods with 8 concurrent clients.
func createPods(b *testing.B, pods *client.ResourceClient[*corev1.Pod], n int) {
	b.Helper()
	const workers = 8
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				_, err := pods.Create(context.Background(), newPod(fmt.Sprintf("p-%05d", i), map[string]string{"app": "bench"}), metav1.CreateOptions{})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}

func BenchmarkList10k(b *testing.B) {
	ctx := context.Background()
	pods := client.NewResource(startServer(b, memory.Config{}), client.Pods).Namespace("default")
	const n = 10000
	createPods(b, pods, n)
	b.ReportAllocs()
	for b.Loop() {
		l, err := pods.List(ctx, metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if len(l.Items) != n {
			b.Fatalf("listed %d pods, want %d", len(l.Items), n)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lists/s")
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "objects/s")
}

// BenchmarkWatchFanout makes one change per iteration and waits until
// every one of the watchers has received it.
func BenchmarkWatchFanout(b *testing.B) {
	for _, watchers := range []int{10, 100} {
		b.Run(strconv.Itoa(watchers), func(b *testing.B) {
			ctx := context.Background()
			pods := client.NewResource(startServer(b, memory.Config{}), client.Pods).Namespace("default")
			p, err := pods.Create(ctx, newPod("p", nil), metav1.CreateOptions{})
			if err != nil {
				b.Fatal(err)
			}
			var ws []cache.Watch[*corev1.Pod]
			for range watchers {
				w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: p.ResourceVersion})
				if err != nil {
					b.Fatal(err)
				}
				ws = append(ws, w)
			}
			// Each change is one MODIFIED event on every watch; the next change
			// is made only after all of them arrived.
			var got, consumers sync.WaitGroup
			for _, w := range ws {
				consumers.Go(func() {
					for ev := range w.ResultChan() {
						if ev.Type == watch.Modified {
							got.Done()
						}
					}
				})
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				got.Add(watchers)
				patch := []byte(`{"metadata":{"labels":{"i":"` + strconv.Itoa(i) + `"}}}`)
				if _, err := pods.Patch(ctx, "p", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
					b.Fatal(err)
				}
				got.Wait()
				i++
			}
			b.StopTimer()
			for _, w := range ws {
				w.Stop()
			}
			consumers.Wait()
			b.ReportMetric(float64(b.N*watchers)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
