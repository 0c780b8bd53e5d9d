package informers_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/cache/cachetest"
	"github.com/kplane/kplane/pkg/informers"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	podsGVR = corev1.SchemeGroupVersion.WithResource("pods")
	rsGVR   = appsv1.SchemeGroupVersion.WithResource("replicasets")
)

func newFactory(t *testing.T, cfg informers.Config) *informers.Factory {
	t.Helper()
	f, err := informers.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Shutdown)
	return f
}

// sourceLW returns a constructor that records the namespaces it was asked for.
func sourceLW[T cache.Object](src *cachetest.Source[T], namespaces *[]string) func(string) cache.ListerWatcher[T] {
	return func(ns string) cache.ListerWatcher[T] {
		*namespaces = append(*namespaces, ns)
		return src
	}
}

func TestForSharesOneInformerPerResource(t *testing.T) {
	f := newFactory(t, informers.Config{Namespace: "team"})
	src := cachetest.New[*corev1.Pod](cachetest.Config{})
	var asked []string
	var wg sync.WaitGroup
	got := make([]*cache.SharedIndexInformer[*corev1.Pod], 8)
	for i := range got {
		wg.Go(func() {
			inf, err := informers.For(f, podsGVR, sourceLW(src, &asked))
			if err != nil {
				t.Error(err)
			}
			got[i] = inf
		})
	}
	wg.Wait()
	for _, inf := range got[1:] {
		if inf != got[0] {
			t.Fatal("two informers for one resource")
		}
	}
	if d := cmp.Diff([]string{"team"}, asked); d != "" {
		t.Errorf("constructor calls: %s", d)
	}
	// Another object type for the same resource (as unstructured and
	// metadata-only informers are) is an informer of its own.
	other, err := informers.For(f, podsGVR, func(string) cache.ListerWatcher[*corev1.Node] {
		return cachetest.New[*corev1.Node](cachetest.Config{})
	})
	if err != nil || other == nil {
		t.Errorf("same resource, other type: %v", err)
	}
	if again, _ := informers.For[*corev1.Pod](f, podsGVR, nil); again != got[0] {
		t.Error("the first type's informer was replaced")
	}
	if _, err := informers.For[*appsv1.ReplicaSet](f, rsGVR, nil); err == nil {
		t.Error("nil constructor: no error")
	}
	if _, err := f.Pods(); err == nil {
		t.Error("typed accessor without a Client: no error")
	}
}

func TestStartStartsOnlyNewInformersAndShutdownWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, err := informers.New(informers.Config{})
		if err != nil {
			t.Fatal(err)
		}
		pods := cachetest.New[*corev1.Pod](cachetest.Config{})
		rss := cachetest.New[*appsv1.ReplicaSet](cachetest.Config{})
		var asked []string
		podInf, _ := informers.For(f, podsGVR, sourceLW(pods, &asked))
		ctx := context.Background()
		f.Start(ctx)
		f.Start(ctx)
		if got := f.WaitForCacheSync(ctx); !cmp.Equal(got, map[schema.GroupVersionResource]bool{podsGVR: true}) {
			t.Errorf("WaitForCacheSync = %v", got)
		}
		rsInf, _ := informers.For(f, rsGVR, sourceLW(rss, &asked))
		if rsInf.HasSynced() {
			t.Error("unstarted informer synced")
		}
		f.Start(ctx)
		got := f.WaitForCacheSync(ctx)
		if !cmp.Equal(got, map[schema.GroupVersionResource]bool{podsGVR: true, rsGVR: true}) {
			t.Errorf("WaitForCacheSync = %v", got)
		}
		// Each informer ran once: one watch-list each.
		for name, counts := range map[string]func() (int, int, int){"pods": pods.Counts, "replicasets": rss.Counts} {
			if _, _, wl := counts(); wl != 1 {
				t.Errorf("%s served %d watch-lists, want 1", name, wl)
			}
		}
		f.Shutdown()
		f.Shutdown()
		if !podInf.IsStopped() || !rsInf.IsStopped() {
			t.Error("informers still running after Shutdown")
		}
		if n := pods.OpenWatches() + rss.OpenWatches(); n != 0 {
			t.Errorf("%d watches open after Shutdown", n)
		}
		f.Start(ctx) // does nothing
	})
}

// broken never lists.
type broken struct{}

func (broken) List(context.Context, metav1.ListOptions) (*cache.List[*corev1.Node], error) {
	return nil, errors.New("down")
}
func (broken) Watch(context.Context, metav1.ListOptions) (cache.Watch[*corev1.Node], error) {
	return nil, errors.New("down")
}

func TestWaitForCacheSyncReportsPerResource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, _ := informers.New(informers.Config{})
		defer f.Shutdown()
		var asked []string
		_, _ = informers.For(f, podsGVR, sourceLW(cachetest.New[*corev1.Pod](cachetest.Config{}), &asked))
		nodesGVR := corev1.SchemeGroupVersion.WithResource("nodes")
		nodes, _ := informers.For(f, nodesGVR, func(string) cache.ListerWatcher[*corev1.Node] { return broken{} })
		f.Start(context.Background())
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		got := f.WaitForCacheSync(ctx)
		want := map[schema.GroupVersionResource]bool{podsGVR: true, nodesGVR: false}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("-want +got:\n%s", d)
		}
		if informers.WaitForNamedCacheSync(ctx, "test", nodes.HasSynced) {
			t.Error("WaitForNamedCacheSync = true for an unsynced informer")
		}
	})
}

func TestWaitForNamedCacheSync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		n := 0
		synced := func() bool { mu.Lock(); defer mu.Unlock(); n++; return n > 3 }
		if !informers.WaitForNamedCacheSync(context.Background(), "test", synced) {
			t.Error("false once synced")
		}
	})
}
