package namespace

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kplane/kplane/pkg/apiserver"
	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/storage/memory"
)

// syncFixture is a syncer against a real API server whose configmap
// collection deletes can be made to fail, with the requeues it asks for
// recorded instead of scheduled.
type syncFixture struct {
	s        *syncer
	c        *client.Client
	failCMs  atomic.Bool
	requeues []string
	// deleting receives the names of namespaces the cache has seen marked
	// for deletion.
	deleting chan string
}

func newSyncFixture(t *testing.T) *syncFixture {
	t.Helper()
	backend, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { backend.Close() })
	srv, err := apiserver.New(apiserver.Config{Backend: backend})
	if err != nil {
		t.Fatal(err)
	}
	fx := &syncFixture{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fx.failCMs.Load() && r.Method == http.MethodDelete && strings.HasSuffix(r.URL.Path, "/configmaps") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"storage is down","reason":"InternalError","code":500}`))
			return
		}
		srv.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	c, err := client.New(client.Config{Host: hs.URL, HTTPClient: &http.Client{Transport: transport}})
	if err != nil {
		t.Fatal(err)
	}
	fx.c = c
	f, err := informers.New(informers.Config{Client: c, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := f.Namespaces()
	if err != nil {
		t.Fatal(err)
	}
	fx.deleting = make(chan string, 16) // more than a test deletes
	if _, err := inf.AddEventHandler(cache.HandlerFuncs[*corev1.Namespace]{
		UpdateFunc: func(_, ns *corev1.Namespace) {
			if ns.DeletionTimestamp != nil {
				select {
				case fx.deleting <- ns.Name:
				default:
				}
			}
		},
	}, cache.HandlerOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.Start(ctx)
	t.Cleanup(func() { cancel(); f.Shutdown() })
	if !cache.WaitForCacheSync(ctx, inf.HasSynced) {
		t.Fatal("namespace cache did not sync")
	}
	var mu sync.Mutex
	fx.s = &syncer{
		lister:     inf.Lister(),
		namespaces: client.NewResource(c, client.Namespaces),
		client:     c,
		resources:  DefaultResources(),
		clock:      clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
		recheck:    time.Minute,
		enqueueAfter: func(key string, d time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			if d != time.Minute {
				t.Errorf("requeue of %s after %v, want the recheck interval", key, d)
			}
			fx.requeues = append(fx.requeues, key)
		},
	}
	return fx
}

// waitCached waits until the namespace cache shows ns being deleted.
func (fx *syncFixture) waitCached(t *testing.T, ns string) {
	t.Helper()
	timeout := time.After(10 * time.Second) // a failure bound, not pacing
	for {
		select {
		case name := <-fx.deleting:
			if name == ns {
				return
			}
		case <-timeout:
			t.Fatalf("cache never showed namespace %s deleted", ns)
		}
	}
}

func TestSyncFailureThenSuccess(t *testing.T) {
	fx := newSyncFixture(t)
	ctx := t.Context()
	nss := client.NewResource(fx.c, client.Namespaces)
	if _, err := nss.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.NewResource(fx.c, client.ConfigMaps).Namespace("team").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// An active namespace is left alone.
	if err := fx.s.sync(ctx, "team"); err != nil {
		t.Fatal(err)
	}
	if err := nss.Delete(ctx, "team", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	fx.waitCached(t, "team")

	fx.failCMs.Store(true)
	err := fx.s.sync(ctx, "team")
	if err == nil || !strings.Contains(err.Error(), "storage is down") {
		t.Fatalf("sync with failing deletes: %v", err)
	}
	ns, err := nss.Get(ctx, "team", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := condition(ns, corev1.NamespaceDeletionContentFailure)
	if c == nil || c.Status != corev1.ConditionTrue || c.Reason != "ContentDeletionFailed" || !strings.Contains(c.Message, "storage is down") {
		t.Fatalf("content failure condition %+v", c)
	}
	if len(ns.Spec.Finalizers) != 1 {
		t.Fatalf("finalized despite the failure: %v", ns.Spec.Finalizers)
	}

	fx.failCMs.Store(false)
	if err := fx.s.sync(ctx, "team"); err != nil {
		t.Fatal(err)
	}
	if _, err := nss.Get(ctx, "team", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("namespace after a clean sync: %v, want NotFound", err)
	}
	if len(fx.requeues) != 0 {
		t.Errorf("requeues %v, want none", fx.requeues)
	}
	// A sync of a namespace that is gone does nothing.
	if err := fx.s.sync(ctx, "team"); err != nil {
		t.Errorf("sync of a deleted namespace: %v", err)
	}
}

func TestSyncWaitsForFinalizers(t *testing.T) {
	fx := newSyncFixture(t)
	ctx := t.Context()
	nss := client.NewResource(fx.c, client.Namespaces)
	cms := client.NewResource(fx.c, client.ConfigMaps).Namespace("team")
	if _, err := nss.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := nss.Delete(ctx, "team", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	fx.waitCached(t, "team")
	for range 2 {
		if err := fx.s.sync(ctx, "team"); err != nil {
			t.Fatal(err)
		}
	}
	if len(fx.requeues) != 2 || fx.requeues[0] != "team" {
		t.Fatalf("requeues %v, want team twice", fx.requeues)
	}
	ns, err := nss.Get(ctx, "team", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f := condition(ns, corev1.NamespaceFinalizersRemaining)
	if f == nil || f.Status != corev1.ConditionTrue || f.Message != "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances" {
		t.Fatalf("finalizers condition %+v", f)
	}
	if want := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)); !f.LastTransitionTime.Equal(&want) {
		t.Errorf("transition time %v, want the injected clock's %v", f.LastTransitionTime, want)
	}
	cm, err := cms.Get(ctx, "held", metav1.GetOptions{})
	if err != nil || cm.DeletionTimestamp == nil {
		t.Fatalf("held configmap %v %v, want it marked for deletion", cm, err)
	}
	cm.Finalizers = nil
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := fx.s.sync(ctx, "team"); err != nil {
		t.Fatal(err)
	}
	if _, err := nss.Get(ctx, "team", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("namespace once its content went: %v, want NotFound", err)
	}
}
