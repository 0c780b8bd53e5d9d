package compat

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/client"
)

// Side-by-side benchmarks of kplane's pkg/client and client-go's typed
// clientset against the same kplane API server over loopback HTTP, so the
// difference is the clients' own cost (encoding, decoding, transport).

// benchClients starts a server and returns both clients for its pods.
func benchClients(b *testing.B) (*server, *client.ResourceClient[*corev1.Pod], func(ns string) podsAPI) {
	b.Helper()
	srv := startServer(b)
	c, err := client.New(client.Config{Host: srv.URL})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.CloseIdleConnections)
	cs := srv.clientset(b)
	return srv, client.NewResource(c, client.Pods), func(ns string) podsAPI { return cs.CoreV1().Pods(ns) }
}

// podsAPI is the part of client-go's pod client the benchmarks use.
type podsAPI interface {
	Create(ctx context.Context, pod *corev1.Pod, opts metav1.CreateOptions) (*corev1.Pod, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Pod, error)
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error)
}

func BenchmarkClientGet(b *testing.B) {
	ctx := context.Background()
	_, kp, cg := benchClients(b)
	if _, err := kp.Namespace("default").Create(ctx, pod("p", nil), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	b.Run("kplane", func(b *testing.B) {
		pods := kp.Namespace("default")
		b.ReportAllocs()
		for b.Loop() {
			if _, err := pods.Get(ctx, "p", metav1.GetOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("client-go", func(b *testing.B) {
		pods := cg("default")
		b.ReportAllocs()
		for b.Loop() {
			if _, err := pods.Get(ctx, "p", metav1.GetOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkClientCreate(b *testing.B) {
	ctx := context.Background()
	_, kp, cg := benchClients(b)
	b.Run("kplane", func(b *testing.B) {
		pods := kp.Namespace("default")
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, err := pods.Create(ctx, pod("k-"+strconv.Itoa(i), nil), metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("client-go", func(b *testing.B) {
		pods := cg("default")
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, err := pods.Create(ctx, pod("c-"+strconv.Itoa(i), nil), metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// BenchmarkClientList5k lists 5,000 pods: mostly response decoding.
func BenchmarkClientList5k(b *testing.B) {
	ctx := context.Background()
	_, kp, cg := benchClients(b)
	const n = 5000
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < n; i += 4 {
				if _, err := kp.Namespace("default").Create(ctx, pod(fmt.Sprintf("p-%05d", i), nil), metav1.CreateOptions{}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.Run("kplane", func(b *testing.B) {
		pods := kp.Namespace("default")
		b.ReportAllocs()
		for b.Loop() {
			if l, err := pods.List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != n {
				b.Fatalf("list: %v", err)
			}
		}
	})
	b.Run("client-go", func(b *testing.B) {
		pods := cg("default")
		b.ReportAllocs()
		for b.Loop() {
			if l, err := pods.List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != n {
				b.Fatalf("list: %v", err)
			}
		}
	})
}
