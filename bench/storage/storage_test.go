package storage_test

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
	"github.com/kplane/kplane/pkg/storage/memory"
)

// newStore returns the Pod store of a fresh memory backend.
func newStore(b *testing.B, cfg memory.Config) (*memory.Backend, storage.Interface) {
	b.Helper()
	be, err := memory.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = be.Close() })
	s, err := be.Storage(storage.ResourceConfig{
		Codec:       storage.JSONCodec{},
		NewFunc:     func() kruntime.Object { return &corev1.Pod{} },
		NewListFunc: func() kruntime.Object { return &corev1.PodList{} },
	})
	if err != nil {
		b.Fatal(err)
	}
	return be, s
}

// pod is a realistic, ~1 KiB Pod.
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

func fill(b *testing.B, s storage.Interface, n int) {
	b.Helper()
	ctx := context.Background()
	for i := range n {
		if err := s.Create(ctx, key(i), pod(i), &corev1.Pod{}); err != nil {
			b.Fatal(err)
		}
	}
}

func setPhase(phase string) storage.UpdateFunc {
	return func(cur kruntime.Object) (kruntime.Object, error) {
		p := cur.(*corev1.Pod)
		p.Status.Message = phase
		return p, nil
	}
}

func BenchmarkCreate(b *testing.B) {
	_, s := newStore(b, memory.Config{})
	ctx := context.Background()
	objs := make([]*corev1.Pod, b.N)
	for i := range objs {
		objs[i] = pod(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := s.Create(ctx, key(i), objs[i], &corev1.Pod{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUpdate(b *testing.B) {
	_, s := newStore(b, memory.Config{})
	fill(b, s, 1000)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := s.GuaranteedUpdate(ctx, key(i%1000), &corev1.Pod{}, false, nil, setPhase(fmt.Sprint(i))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUpdateRead updates keys that a list has read, which keep their
// newest version decoded through updates.
func BenchmarkUpdateRead(b *testing.B) {
	_, s := newStore(b, memory.Config{})
	fill(b, s, 1000)
	ctx := context.Background()
	if err := s.GetList(ctx, "/pods/default", storage.ListOptions{Recursive: true}, &corev1.PodList{}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := s.GuaranteedUpdate(ctx, key(i%1000), &corev1.Pod{}, false, nil, setPhase(fmt.Sprint(i))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUpdateParallel updates distinct keys from GOMAXPROCS goroutines.
func BenchmarkUpdateParallel(b *testing.B) {
	_, s := newStore(b, memory.Config{})
	fill(b, s, 1000)
	ctx := context.Background()
	var n atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := int(n.Add(1))
			if err := s.GuaranteedUpdate(ctx, key(i%1000), &corev1.Pod{}, false, nil, setPhase(fmt.Sprint(i))); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkGet reads 10,000 keys in turn; the first read of each decodes
// it, later ones copy the decoded object kept since.
func BenchmarkGet(b *testing.B) { benchGet(b, memory.Config{}, false) }

// BenchmarkGetRead is BenchmarkGet on keys a list has read: every Get
// copies a decoded object.
func BenchmarkGetRead(b *testing.B) { benchGet(b, memory.Config{}, true) }

// BenchmarkGetNoCache is BenchmarkGet with the decoded cache off: every Get
// decodes.
func BenchmarkGetNoCache(b *testing.B) { benchGet(b, memory.Config{DisableDecodedCache: true}, false) }

func benchGet(b *testing.B, cfg memory.Config, read bool) {
	_, s := newStore(b, cfg)
	fill(b, s, 10000)
	ctx := context.Background()
	if read {
		if err := s.GetList(ctx, "/pods/default", storage.ListOptions{Recursive: true}, &corev1.PodList{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := s.Get(ctx, key(i%10000), storage.GetOptions{}, &corev1.Pod{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkList10k lists 10,000 pods in one consistent read.
func BenchmarkList10k(b *testing.B) {
	_, s := newStore(b, memory.Config{})
	fill(b, s, 10000)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		l := &corev1.PodList{}
		if err := s.GetList(ctx, "/pods/default", storage.ListOptions{Recursive: true}, l); err != nil {
			b.Fatal(err)
		}
		if len(l.Items) != 10000 {
			b.Fatalf("listed %d", len(l.Items))
		}
	}
	b.ReportMetric(float64(b.N*10000)/b.Elapsed().Seconds(), "objects/s")
}

// BenchmarkList10kPaged lists 10,000 pods in pages of 500.
func BenchmarkList10kPaged(b *testing.B) {
	_, s := newStore(b, memory.Config{})
	fill(b, s, 10000)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		n, cont := 0, ""
		for {
			l := &corev1.PodList{}
			opts := storage.ListOptions{Recursive: true, Predicate: storage.Predicate{Limit: 500, Continue: cont}}
			if err := s.GetList(ctx, "/pods/default", opts, l); err != nil {
				b.Fatal(err)
			}
			n += len(l.Items)
			if cont = l.Continue; cont == "" {
				break
			}
		}
		if n != 10000 {
			b.Fatalf("listed %d", n)
		}
	}
	b.ReportMetric(float64(b.N*10000)/b.Elapsed().Seconds(), "objects/s")
}

// BenchmarkWatchFanOut100 measures one writer feeding 100 watchers of the
// same prefix: each op is one update delivered to all 100. The writer waits
// for the watchers every 1,000 updates, so the figure is the sustained rate
// of the whole pipeline, not how fast writes can outrun the watchers.
func BenchmarkWatchFanOut100(b *testing.B) { watchFanOut(b, false) }

// BenchmarkWatchFanOut100Read is BenchmarkWatchFanOut100 on keys a list has
// read: the update keeps them decoded and hands its watchers both states
// without decoding.
func BenchmarkWatchFanOut100Read(b *testing.B) { watchFanOut(b, true) }

func watchFanOut(b *testing.B, read bool) {
	const watchers, window = 100, 1000
	be, s := newStore(b, memory.Config{HistoryRevisions: 4 * window})
	fill(b, s, 100)
	ctx := context.Background()
	if read {
		if err := s.GetList(ctx, "/pods/default", storage.ListOptions{Recursive: true}, &corev1.PodList{}); err != nil {
			b.Fatal(err)
		}
	}
	start, err := be.CurrentRevision(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var seen [watchers]atomic.Uint64 // the newest revision each watcher got
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
	var last uint64
	for i := range b.N {
		out := &corev1.Pod{}
		if err := s.GuaranteedUpdate(ctx, key(i%100), out, false, nil, setPhase(fmt.Sprint(i))); err != nil {
			b.Fatal(err)
		}
		if i%window == window-1 || i == b.N-1 {
			last, _ = storage.ObjectResourceVersion(out)
			waitAll(last)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N*watchers)/b.Elapsed().Seconds(), "events/s")
	for _, w := range ws {
		w.Stop()
	}
	wg.Wait()
}

// BenchmarkMemoryPerObject reports the heap each stored pod costs (its
// encoded bytes plus the index), against the size of its JSON.
func BenchmarkMemoryPerObject(b *testing.B) { memoryPerObject(b, memory.Config{}, false) }

// BenchmarkMemoryPerObjectRead reports the heap each stored pod costs once
// a list has read it, which keeps it decoded next to its bytes.
func BenchmarkMemoryPerObjectRead(b *testing.B) { memoryPerObject(b, memory.Config{}, true) }

// BenchmarkMemoryPerObjectReadNoCache is BenchmarkMemoryPerObjectRead with
// the decoded cache off.
func BenchmarkMemoryPerObjectReadNoCache(b *testing.B) {
	memoryPerObject(b, memory.Config{DisableDecodedCache: true}, true)
}

func memoryPerObject(b *testing.B, cfg memory.Config, read bool) {
	const n = 10000
	for range b.N {
		b.StopTimer()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		b.StartTimer()
		be, s := newStore(b, cfg)
		fill(b, s, n)
		if read {
			if err := s.GetList(context.Background(), "/pods/default", storage.ListOptions{Recursive: true}, &corev1.PodList{}); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(be)
		data, _ := storage.JSONCodec{}.Encode(pod(0))
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heap-bytes/object")
		b.ReportMetric(float64(len(data)), "json-bytes/object")
		_ = be.Close()
		b.StartTimer()
	}
}
