package compat

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/kplane/kplane/pkg/storage/memory"
)

// recorder collects informer notifications as "verb/name" strings and
// signals each one.
type recorder struct {
	mu     sync.Mutex
	events []string
	notify chan struct{} // size 1: a wake-up, the slice is the record
}

func newRecorder() *recorder { return &recorder{notify: make(chan struct{}, 1)} }

func (r *recorder) add(s string) {
	r.mu.Lock()
	r.events = append(r.events, s)
	r.mu.Unlock()
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

func (r *recorder) handler() cache.ResourceEventHandler {
	name := func(obj any) string {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		return obj.(metav1.Object).GetName()
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.add("add/" + name(obj)) },
		UpdateFunc: func(_, obj any) { r.add("update/" + name(obj)) },
		DeleteFunc: func(obj any) { r.add("delete/" + name(obj)) },
	}
}

// waitFor blocks until the recorder has seen want, failing after a hang
// guard.
func (r *recorder) waitFor(t testing.TB, want string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		r.mu.Lock()
		for _, e := range r.events {
			if e == want {
				r.mu.Unlock()
				return
			}
		}
		r.mu.Unlock()
		select {
		case <-r.notify:
		case <-deadline:
			r.mu.Lock()
			defer r.mu.Unlock()
			t.Fatalf("informer never delivered %q; got %v", want, r.events)
		}
	}
}

// TestSharedInformerFactory runs client-go's shared informers for pods and
// deployments against kplane: they must sync (client-go uses the streaming
// watch-list by default) and then see adds, updates and deletes.
func TestSharedInformerFactory(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := startServer(t)
	cs := srv.clientset(t)

	// Objects that exist before the informers start arrive in the initial
	// state.
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod("before", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	factory := informers.NewSharedInformerFactory(cs, 0)
	podInformer := factory.Core().V1().Pods()
	depInformer := factory.Apps().V1().Deployments()
	pods, deps := newRecorder(), newRecorder()
	if _, err := podInformer.Informer().AddEventHandler(pods.handler()); err != nil {
		t.Fatal(err)
	}
	if _, err := depInformer.Informer().AddEventHandler(deps.handler()); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	defer cancel()

	syncCtx, syncCancel := context.WithTimeout(ctx, 30*time.Second)
	defer syncCancel()
	for typ, ok := range factory.WaitForCacheSync(syncCtx.Done()) {
		if !ok {
			t.Fatalf("informer for %v did not sync", typ)
		}
	}
	if !srv.sawRequest("GET", "/api/v1/pods?", "sendInitialEvents=true", "watch=true") {
		t.Error("the pod informer did not use the watch-list (sendInitialEvents) protocol")
	}
	pods.waitFor(t, "add/before")
	if p, err := podInformer.Lister().Pods("default").Get("before"); err != nil || p.Name != "before" {
		t.Errorf("lister get: %v, %v", p, err)
	}

	// Adds, updates and deletes flow through.
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod("p1", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods.waitFor(t, "add/p1")
	if _, err := cs.CoreV1().Pods("default").Patch(ctx, "p1", types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	pods.waitFor(t, "update/p1")
	if err := cs.CoreV1().Pods("default").Delete(ctx, "p1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	pods.waitFor(t, "delete/p1")

	d, err := cs.AppsV1().Deployments("default").Create(ctx, deployment("web", 1), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deps.waitFor(t, "add/web")
	d.Spec.Replicas = new(int32)
	if _, err := cs.AppsV1().Deployments("default").Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	deps.waitFor(t, "update/web")
	if err := cs.AppsV1().Deployments("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deps.waitFor(t, "delete/web")

	// The caches agree with the server.
	cached, err := podInformer.Lister().List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	live, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cached) != len(live.Items) {
		t.Errorf("pod cache holds %d pods, server %d", len(cached), len(live.Items))
	}
	if _, err := depInformer.Lister().Deployments("default").Get("web"); err == nil {
		t.Error("deleted deployment still in the cache")
	}
}

// TestInformerRelistsAfterExpired cuts client-go's informer off while the
// server compacts past the informer's resourceVersion: when it reconnects
// its watch is answered 410 Expired, it relists, and its cache converges to
// the server's state, deletions included.
func TestInformerRelistsAfterExpired(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := startServerWith(t, memory.Config{HistoryRevisions: 5})
	cs := srv.clientset(t)
	cms := cs.CoreV1().ConfigMaps("default")
	for _, n := range []string{"keep", "gone"} {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	inf := factory.Core().V1().ConfigMaps()
	rec := newRecorder()
	if _, err := inf.Informer().AddEventHandler(rec.handler()); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	defer cancel()
	syncCtx, syncCancel := context.WithTimeout(ctx, 30*time.Second)
	defer syncCancel()
	for typ, ok := range factory.WaitForCacheSync(syncCtx.Done()) {
		if !ok {
			t.Fatalf("informer for %v did not sync", typ)
		}
	}
	rec.waitFor(t, "add/gone")

	// Disconnect the informer and change more than the history holds.
	srv.refuseWatches.Store(true)
	srv.dropConnections()
	if err := cms.Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		patch := []byte(`{"data":{"i":"` + strconv.Itoa(i) + `"}}`)
		if _, err := cms.Patch(ctx, "keep", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "new"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	srv.refuseWatches.Store(false)

	rec.waitFor(t, "add/new")
	rec.waitFor(t, "delete/gone")
	keep, err := inf.Lister().ConfigMaps("default").Get("keep")
	if err != nil || keep.Data["i"] != "9" {
		t.Errorf("cached keep = %v, %v; want data i=9", keep, err)
	}
	if n := srv.countRequests("GET", "/api/v1/configmaps?", "sendInitialEvents=true"); n < 2 {
		t.Errorf("the informer listed %d times, want a relist after the 410", n)
	}
}
