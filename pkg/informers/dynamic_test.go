package informers_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	testclock "k8s.io/utils/clock/testing"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/testenv"
)

// A factory serves typed, unstructured and metadata-only informers of one
// resource side by side, one of each, and unstructured ones for custom
// resources.
func TestDynamicAndMetadataInformers(t *testing.T) {
	crd := widgetsCRD()
	w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w1", "namespace": "default"}, "size": int64(3)}}
	env := testenv.Start(t, testenv.WithCRDs(crd), testenv.WithObjects(w, deploymentNamed("web")))
	f := newFactory(t, informers.Config{Client: env.Client})
	deployments := client.Deployments.GroupVersionResource
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

	typed, err := f.Deployments()
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := informers.ForDynamic(f, deployments)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := informers.ForMetadata(f, deployments)
	if err != nil {
		t.Fatal(err)
	}
	cr, err := informers.ForDynamic(f, widgets)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := informers.ForDynamic(f, deployments); again != dyn {
		t.Error("a second ForDynamic made another informer")
	}
	if again, _ := informers.ForMetadata(f, deployments); again != meta {
		t.Error("a second ForMetadata made another informer")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.Start(ctx)
	for gvr, ok := range f.WaitForCacheSync(ctx) {
		if !ok {
			t.Fatalf("%s did not sync", gvr)
		}
	}
	if d, err := typed.Lister().Get("default/web"); err != nil || d.Name != "web" {
		t.Errorf("typed: %v, %v", d, err)
	}
	if u, err := dyn.Lister().Get("default/web"); err != nil || u.GetKind() != "Deployment" {
		t.Errorf("unstructured: %v, %v", u, err)
	}
	if m, err := meta.Lister().Get("default/web"); err != nil || m.Name != "web" {
		t.Errorf("metadata: %v, %v", m, err)
	}
	got, err := cr.Lister().Get("default/w1")
	if err != nil {
		t.Fatal(err)
	}
	if n, _, _ := unstructured.NestedInt64(got.Object, "size"); n != 3 {
		t.Errorf("custom resource %v", got.Object)
	}
}

func deploymentNamed(name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
	d.Spec.Template.Labels = labels
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "nginx"}}
	return d
}

// countingLW counts the lists and watches it serves.
type countingLW[T cache.Object] struct {
	next  cache.ListerWatcher[T]
	calls *atomic.Int64
}

func (c countingLW[T]) List(ctx context.Context, opts metav1.ListOptions) (*cache.List[T], error) {
	c.calls.Add(1)
	return c.next.List(ctx, opts)
}

func (c countingLW[T]) Watch(ctx context.Context, opts metav1.ListOptions) (cache.Watch[T], error) {
	c.calls.Add(1)
	return c.next.Watch(ctx, opts)
}

// An informer of a custom resource whose CRD is not installed reports the
// server's NotFound as why it has not synced, asks nothing more until its
// backoff ends on the clock (it does not spin), and syncs at the next try
// once the CRD is installed, watch-list included.
func TestInformerOfResourceNotServedYet(t *testing.T) {
	env := testenv.Start(t)
	clk := testclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	f := newFactory(t, informers.Config{Client: env.Client, Clock: clk})
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	var calls atomic.Int64
	m := client.NewMetadata(env.Client)
	inf, err := informers.For(f, widgets, func(ns string) cache.ListerWatcher[*metav1.PartialObjectMetadata] {
		return countingLW[*metav1.PartialObjectMetadata]{next: m.Resource(widgets).Namespace(ns).ListerWatcher(), calls: &calls}
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.Start(ctx)

	waitUntil(t, "the informer waits on its backoff", clk.HasWaiters)
	why, listed := f.NotSynced()[widgets]
	if !listed || !apierrors.IsNotFound(why) {
		t.Fatalf("NotSynced()[widgets] = %v (listed %v), want a NotFound", why, listed)
	}
	if !apierrors.IsNotFound(inf.LastSyncError()) {
		t.Fatalf("LastSyncError() = %v, want a NotFound", inf.LastSyncError())
	}
	tried := calls.Load()
	if tried == 0 || tried > 2 {
		t.Fatalf("%d requests before backing off, want 1 or 2 (watch-list, list)", tried)
	}

	crd := widgetsCRD()
	if err := testenv.InstallCRDs(ctx, env.Client, crd); err != nil {
		t.Fatal(err)
	}
	w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w1", "namespace": "default"}}}
	if _, err := client.NewDynamic(env.Client).Resource(widgets).Namespace("default").Create(ctx, w, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := calls.Load(); got != tried {
		t.Fatalf("%d requests while the clock stood still, want %d", got, tried)
	}
	clk.Step(time.Minute)
	waitUntil(t, "the informer syncs", inf.HasSynced)
	waitUntil(t, "w1 is cached", func() bool { _, err := inf.Lister().Get("default/w1"); return err == nil })
	if err := inf.LastSyncError(); err != nil {
		t.Errorf("LastSyncError() = %v after syncing", err)
	}
	if ns := f.NotSynced(); len(ns) != 0 {
		t.Errorf("NotSynced() = %v after syncing", ns)
	}
}

// waitUntil polls cond until it holds, failing the test after a while.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// expiringProxy stands between a client and an environment's server: it
// can hold every request back, cut every connection (a dropped watch) and
// answer the next watches with a 410 Expired, as a server whose history
// was compacted does.
type expiringProxy struct {
	hs      *httptest.Server
	expire  atomic.Int64 // watches still to answer 410
	expired atomic.Int64
	mu      sync.Mutex
	held    chan struct{} // closed to let held requests through; guarded by mu
}

func (p *expiringProxy) hold() {
	p.mu.Lock()
	p.held = make(chan struct{})
	p.mu.Unlock()
}

func (p *expiringProxy) release() {
	p.mu.Lock()
	close(p.held)
	p.held = nil
	p.mu.Unlock()
}

func newExpiringProxy(t *testing.T, env *testenv.Env) *expiringProxy {
	t.Helper()
	target, err := url.Parse(env.URL)
	if err != nil {
		t.Fatal(err)
	}
	p := &expiringProxy{}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1
	p.hs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		held := p.held
		p.mu.Unlock()
		if held != nil {
			select {
			case <-held:
			case <-r.Context().Done():
				return
			}
		}
		if r.URL.Query().Get("watch") == "true" && p.expire.Add(-1) >= 0 {
			p.expired.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusGone)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version","reason":"Expired","code":410}`))
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { p.hs.CloseClientConnections(); p.hs.Close() })
	return p
}

// Unstructured and metadata-only informers of a custom resource, over the
// wire, recover from a dropped watch answered with 410 as typed ones do:
// they relist, report the objects deleted meanwhile as tombstones with
// their last known state, and announce the ones created meanwhile.
func TestDynamicAndMetadataInformersRelistAfterExpiry(t *testing.T) {
	env := testenv.Start(t, testenv.WithCRDs(widgetsCRD()))
	proxy := newExpiringProxy(t, env)
	cfg := env.REST.ClientConfig()
	cfg.Host = proxy.hs.URL
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	wc := client.NewDynamic(env.Client).Resource(widgets).Namespace("default")
	ctx := t.Context()
	create := func(name string) {
		t.Helper()
		w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": name}}}
		if _, err := wc.Create(ctx, w, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create("a")
	create("b")

	f := newFactory(t, informers.Config{Client: c})
	dyn, err := informers.ForDynamic(f, widgets)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := informers.ForMetadata(f, widgets)
	if err != nil {
		t.Fatal(err)
	}
	dynEvents := &eventLog{}
	metaEvents := &eventLog{}
	if _, err := dyn.AddEventHandler(handlerFor[*unstructured.Unstructured](dynEvents), cache.HandlerOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := meta.AddEventHandler(handlerFor[*metav1.PartialObjectMetadata](metaEvents), cache.HandlerOptions{}); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	f.Start(runCtx)
	for gvr, ok := range f.WaitForCacheSync(runCtx) {
		if !ok {
			t.Fatalf("%s did not sync", gvr)
		}
	}
	for _, l := range []*eventLog{dynEvents, metaEvents} {
		waitUntil(t, "the initial adds", func() bool { return l.has("add a initial") && l.has("add b initial") })
	}

	// The watches drop and cannot resume: while they are down, b goes
	// and c comes.
	proxy.hold()
	proxy.hs.CloseClientConnections()
	if err := wc.Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	create("c")
	proxy.expire.Store(2)
	proxy.release()
	for _, l := range []*eventLog{dynEvents, metaEvents} {
		waitUntil(t, "the relist's events", func() bool { return l.has("tombstone b") && l.has("add c") })
	}
	if got := proxy.expired.Load(); got != 2 {
		t.Fatalf("%d watches answered 410, want one per informer", got)
	}
	for name, keys := range map[string][]string{"unstructured": dyn.Indexer().ListKeys(), "metadata": meta.Indexer().ListKeys()} {
		slices.Sort(keys)
		if !slices.Equal(keys, []string{"default/a", "default/c"}) {
			t.Errorf("%s cache holds %v, want default/a and default/c", name, keys)
		}
	}
}

// eventLog records an informer's events as short strings.
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (l *eventLog) add(s string) { l.mu.Lock(); l.events = append(l.events, s); l.mu.Unlock() }

func (l *eventLog) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.events, s)
}

func handlerFor[T cache.Object](l *eventLog) cache.HandlerFuncs[T] {
	return cache.HandlerFuncs[T]{
		AddFunc: func(obj T, initial bool) {
			if initial {
				l.add("add " + obj.GetName() + " initial")
				return
			}
			l.add("add " + obj.GetName())
		},
		DeleteFunc: func(obj any) {
			o, err := cache.Unwrap[T](obj)
			if err != nil {
				l.add("junk")
				return
			}
			if _, ok := obj.(cache.DeletedFinalStateUnknown[T]); ok {
				l.add("tombstone " + o.GetName())
				return
			}
			l.add("delete " + o.GetName())
		},
	}
}

func widgetsCRD() *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve}}}},
		},
	}
}
