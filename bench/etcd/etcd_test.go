package etcd

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/kplane/kplane/pkg/storage"
	"github.com/kplane/kplane/pkg/storage/cacher"
	"github.com/kplane/kplane/pkg/storage/etcd"
	"github.com/kplane/kplane/pkg/storage/memory"
)

var prefixSeq atomic.Int64

// backends are the three setups compared side by side.
var backends = []struct {
	name string
	open func(b *testing.B) storage.Backend
}{
	{"memory", func(b *testing.B) storage.Backend {
		be, err := memory.New(memory.Config{HistoryRevisions: 20000})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { be.Close() })
		return be
	}},
	{"etcd", openEtcd},
	{"etcd+cacher", func(b *testing.B) storage.Backend {
		c, err := cacher.New(cacher.Config{Backend: openEtcd(b)})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		return c
	}},
}

func openEtcd(b *testing.B) storage.Backend {
	be, err := etcd.New(etcd.Config{
		Client: sharedMember(b).Client(),
		Prefix: fmt.Sprintf("/bench-%d", prefixSeq.Add(1)),
		// 100 watchers of a burst of writes each hold a backlog.
		WatchBufferSize: 1000,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { be.Close() })
	return be
}

func pods(b *testing.B, be storage.Backend) storage.Interface {
	s, err := be.Storage(storage.ResourceConfig{
		Codec:       storage.JSONCodec{},
		NewFunc:     func() kruntime.Object { return &corev1.Pod{} },
		NewListFunc: func() kruntime.Object { return &corev1.PodList{} },
	})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// pod is a realistic Pod of about 730 JSON bytes.
func pod(i int) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "default",
			Name:      fmt.Sprintf("web-7d4b9c8f6d-%06d", i),
			UID:       "3f0a9a9e-2b7c-4c3e-9d5e-7a1b2c3d4e5f",
			Labels:    map[string]string{"app": "web", "pod-template-hash": "7d4b9c8f6d", "tier": "frontend"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d4b9c8f6d", UID: "9b2e1f0c-1111-2222-3333-444455556666",
			}},
		},
		Spec: corev1.PodSpec{
			NodeName: "node-1",
			Containers: []corev1.Container{{
				Name:  "web",
				Image: "registry.example.com/web:1.25.3",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Env:   []corev1.EnvVar{{Name: "MODE", Value: "production"}, {Name: "LOG_LEVEL", Value: "info"}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				},
			}},
			RestartPolicy: corev1.RestartPolicyAlways,
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.12"},
	}
}

func key(i int) string { return fmt.Sprintf("/pods/default/web-7d4b9c8f6d-%06d", i) }

// fill creates n pods from 32 writers, so that etcd batches their fsyncs.
func fill(b *testing.B, s storage.Interface, n int) {
	b.Helper()
	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				if err := s.Create(ctx, key(i), pod(i), &corev1.Pod{}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkCreate is one client creating pods one after another: each op
// waits for its write to be durable.
func BenchmarkCreate(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			s := pods(b, be.open(b))
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if err := s.Create(ctx, key(i), pod(i), &corev1.Pod{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCreateParallel is 32 clients creating at once.
func BenchmarkCreateParallel(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			s := pods(b, be.open(b))
			ctx := context.Background()
			var next atomic.Int64
			b.SetParallelism(16) // 32 goroutines on 2 cores
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := int(next.Add(1))
					if err := s.Create(ctx, key(i), pod(i), &corev1.Pod{}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkList10k lists 10,000 pods: "consistent" at resourceVersion ""
// (what a plain kubectl get does), "any" at "0" (what informers start with).
func BenchmarkList10k(b *testing.B) {
	const n = 10000
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			s := pods(b, be.open(b))
			fill(b, s, n)
			ctx := context.Background()
			for _, rv := range []struct{ name, rv string }{{"consistent", ""}, {"any", "0"}} {
				b.Run(rv.name, func(b *testing.B) {
					b.ReportAllocs()
					b.ResetTimer()
					for range b.N {
						l := &corev1.PodList{}
						if err := s.GetList(ctx, "/pods", storage.ListOptions{Recursive: true, ResourceVersion: rv.rv}, l); err != nil {
							b.Fatal(err)
						}
						if len(l.Items) != n {
							b.Fatalf("listed %d pods, want %d", len(l.Items), n)
						}
					}
					b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "objects/s")
				})
			}
		})
	}
}

// BenchmarkWatchFanOut100 is one writer updating pods watched by 100
// watchers of the same prefix: each op is one update delivered to all 100.
// The writer waits for every watcher each 200 updates, so the figure is
// the sustained rate of the whole pipeline.
func BenchmarkWatchFanOut100(b *testing.B) {
	const watchers, window = 100, 200
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			backend := be.open(b)
			s := pods(b, backend)
			fill(b, s, 100)
			ctx := context.Background()
			start, err := backend.CurrentRevision(ctx)
			if err != nil {
				b.Fatal(err)
			}
			var seen [watchers]atomic.Uint64
			var wg sync.WaitGroup
			ws := make([]storage.Watcher, watchers)
			for i := range ws {
				w, err := s.Watch(ctx, "/pods/default", storage.ListOptions{Recursive: true, ResourceVersion: fmt.Sprint(start)})
				if err != nil {
					b.Fatal(err)
				}
				ws[i] = w
				wg.Go(func() {
					for e := range w.ResultChan() {
						if e.Type == "ERROR" {
							b.Errorf("watcher %d: %v", i, e.Object)
							return
						}
						rv, _ := storage.ObjectResourceVersion(e.Object)
						seen[i].Store(rv)
					}
				})
			}
			waitAll := func(rev uint64) {
				for i := range seen {
					for seen[i].Load() < rev {
						runtime.Gosched()
					}
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				out := &corev1.Pod{}
				err := s.GuaranteedUpdate(ctx, key(i%100), out, false, nil, func(cur kruntime.Object) (kruntime.Object, error) {
					p := cur.(*corev1.Pod)
					p.Status.Message = fmt.Sprint(i)
					return p, nil
				})
				if err != nil {
					b.Fatal(err)
				}
				if i%window == window-1 || i == b.N-1 {
					last, _ := storage.ObjectResourceVersion(out)
					waitAll(last)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N*watchers)/b.Elapsed().Seconds(), "events/s")
			for _, w := range ws {
				w.Stop()
			}
			wg.Wait()
		})
	}
}
