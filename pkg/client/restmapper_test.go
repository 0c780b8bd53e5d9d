package client_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	testclock "k8s.io/utils/clock/testing"

	"github.com/kplane/kplane/pkg/apiserver"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/storage/memory"
)

// countingTransport counts the requests for discovery documents.
type countingTransport struct {
	next      http.RoundTripper
	discovery atomic.Int64
}

func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	p := r.URL.Path
	isDoc := p == "/api" || p == "/apis" ||
		strings.HasPrefix(p, "/api/") && strings.Count(p, "/") == 2 ||
		strings.HasPrefix(p, "/apis/") && strings.Count(p, "/") == 3
	if r.Method == http.MethodGet && isDoc {
		t.discovery.Add(1)
	}
	return t.next.RoundTrip(r)
}

// mapperEnv is a kplane API server with its controllers, a client, and a
// RESTMapper on a fake clock whose discovery requests are counted.
type mapperEnv struct {
	c      *client.Client
	mapper *client.RESTMapper
	clock  *testclock.FakeClock
	rt     *countingTransport
}

func newMapperEnv(t testing.TB) *mapperEnv {
	t.Helper()
	backend, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := apiserver.New(apiserver.Config{Backend: backend})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.RunControllers(ctx) })
	hs := httptest.NewServer(srv.Handler())
	rt := &countingTransport{next: http.DefaultTransport.(*http.Transport).Clone()}
	c, err := client.New(client.Config{Host: hs.URL, HTTPClient: &http.Client{Transport: rt}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		c.CloseIdleConnections()
		hs.CloseClientConnections()
		hs.Close()
		_ = backend.Close()
	})
	clk := testclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	mapper, err := client.NewRESTMapper(client.RESTMapperConfig{Discovery: client.NewDiscovery(c), MinRefreshInterval: time.Minute, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return &mapperEnv{c: c, mapper: mapper, clock: clk, rt: rt}
}

var (
	widgetGK = schema.GroupKind{Group: "example.com", Kind: "Widget"}
	gizmoGK  = schema.GroupKind{Group: "other.io", Kind: "Gizmo"}
)

func TestRESTMapperFindsCRDCreatedLater(t *testing.T) {
	e := newMapperEnv(t)
	m := e.mapper
	if n := e.rt.discovery.Load(); n != 0 {
		t.Fatalf("NewRESTMapper read discovery (%d requests)", n)
	}

	// First use: built-ins are there, widgets are not.
	dep, err := m.RESTMapping(schema.GroupKind{Group: "apps", Kind: "Deployment"})
	if err != nil {
		t.Fatal(err)
	}
	if dep.Resource != (schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}) || dep.Scope.Name() != meta.RESTScopeNameNamespace {
		t.Errorf("deployment mapping = %+v scope %s", dep, dep.Scope.Name())
	}
	if _, err := m.RESTMapping(widgetGK); !meta.IsNoMatchError(err) {
		t.Fatalf("widget before its CRD = %v, want NoKindMatch", err)
	}
	afterFirstUse := e.rt.discovery.Load()

	e.createCRDs(t)

	// Within the minimum interval a miss is answered from the snapshot.
	var noKind *meta.NoKindMatchError
	if _, err := m.RESTMapping(widgetGK); !errors.As(err, &noKind) {
		t.Fatalf("widget within the refresh interval = %v, want NoKindMatch", err)
	}
	if n := e.rt.discovery.Load(); n != afterFirstUse {
		t.Errorf("a miss within the interval read discovery (%d requests, was %d)", n, afterFirstUse)
	}
	e.clock.Step(time.Minute)

	tests := []struct {
		name   string
		lookup func() (any, error)
		want   any
	}{
		{"mapping by kind", func() (any, error) {
			r, err := m.RESTMapping(widgetGK)
			if err != nil {
				return nil, err
			}
			return []any{r.Resource, r.GroupVersionKind, r.Scope.Name()}, nil
		}, []any{widgetsGVR, widgetGK.WithVersion("v1"), meta.RESTScopeNameNamespace}},
		{"mapping in a named version", func() (any, error) {
			r, err := m.RESTMapping(widgetGK, "v1beta1")
			if err != nil {
				return nil, err
			}
			return r.Resource, nil
		}, widgetsGVR.GroupVersion().WithResource("widgets").GroupResource().WithVersion("v1beta1")},
		{"mappings of all versions", func() (any, error) {
			rs, err := m.RESTMappings(widgetGK)
			var out []string
			for _, r := range rs {
				out = append(out, r.Resource.Version)
			}
			return out, err
		}, []string{"v1", "v1beta1"}},
		{"cluster-scoped mapping", func() (any, error) {
			r, err := m.RESTMapping(gizmoGK)
			if err != nil {
				return nil, err
			}
			return r.Scope.Name(), nil
		}, meta.RESTScopeNameRoot},
		{"resource by plural", func() (any, error) { return m.ResourceFor(schema.GroupVersionResource{Resource: "widgets"}) }, widgetsGVR},
		{"resource by singular", func() (any, error) { return m.ResourceFor(schema.GroupVersionResource{Resource: "widget"}) }, widgetsGVR},
		{"resource by short name", func() (any, error) { return m.ResourceFor(schema.GroupVersionResource{Resource: "wd"}) }, widgetsGVR},
		{"resource by short name and group", func() (any, error) {
			return m.ResourceFor(schema.GroupVersionResource{Group: "other.io", Resource: "gz"})
		}, schema.GroupVersionResource{Group: "other.io", Version: "v1", Resource: "gizmos"}},
		{"resource in a named version", func() (any, error) {
			return m.ResourceFor(schema.GroupVersionResource{Version: "v1beta1", Resource: "widgets"})
		}, schema.GroupVersionResource{Group: "example.com", Version: "v1beta1", Resource: "widgets"}},
		{"upper-case resource", func() (any, error) { return m.ResourceFor(schema.GroupVersionResource{Resource: "Widgets"}) }, widgetsGVR},
		{"kind by short name", func() (any, error) { return m.KindFor(schema.GroupVersionResource{Resource: "wd"}) }, widgetGK.WithVersion("v1")},
		{"kinds of all versions", func() (any, error) { return m.KindsFor(schema.GroupVersionResource{Resource: "widgets"}) },
			[]schema.GroupVersionKind{widgetGK.WithVersion("v1"), widgetGK.WithVersion("v1beta1")}},
		{"resources of all versions", func() (any, error) {
			return m.ResourcesFor(schema.GroupVersionResource{Group: "example.com", Resource: "widgets"})
		},
			[]schema.GroupVersionResource{widgetsGVR, widgetsGVR.GroupResource().WithVersion("v1beta1")}},
		{"singular", func() (any, error) { return m.ResourceSingularizer("widgets") }, "widget"},
		{"built-in core resource", func() (any, error) { return m.ResourceFor(schema.GroupVersionResource{Resource: "pods"}) },
			schema.GroupVersionResource{Version: "v1", Resource: "pods"}},
		{"category", func() (any, error) {
			grs, err := m.ResourcesForCategory("all")
			var found []schema.GroupResource
			for _, gr := range grs {
				if gr.Group == "example.com" || gr.Group == "other.io" {
					found = append(found, gr)
				}
			}
			sort.Slice(found, func(i, j int) bool { return found[i].Group < found[j].Group })
			return found, err
		}, []schema.GroupResource{{Group: "example.com", Resource: "widgets"}, {Group: "other.io", Resource: "gizmos"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.lookup()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}

	misses := []struct {
		name   string
		lookup func() error
		kind   bool // NoKindMatchError; otherwise NoResourceMatchError
	}{
		{"unknown kind", func() error {
			_, err := m.RESTMapping(schema.GroupKind{Group: "example.com", Kind: "Gadget"})
			return err
		}, true},
		{"kind in an unserved version", func() error { _, err := m.RESTMapping(widgetGK, "v9"); return err }, true},
		{"kind in the wrong group", func() error { _, err := m.RESTMapping(schema.GroupKind{Group: "apps", Kind: "Widget"}); return err }, true},
		{"unknown resource", func() error { _, err := m.ResourceFor(schema.GroupVersionResource{Resource: "gadgets"}); return err }, false},
		{"short name in the wrong group", func() error {
			_, err := m.ResourceFor(schema.GroupVersionResource{Group: "apps", Resource: "wd"})
			return err
		}, false},
		{"kind of unknown resource", func() error { _, err := m.KindFor(schema.GroupVersionResource{Resource: "gadgets"}); return err }, false},
		{"singular of unknown resource", func() error { _, err := m.ResourceSingularizer("gadgets"); return err }, false},
	}
	for _, tc := range misses {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.lookup()
			var nk *meta.NoKindMatchError
			var nr *meta.NoResourceMatchError
			if tc.kind && !errors.As(err, &nk) || !tc.kind && !errors.As(err, &nr) {
				t.Errorf("error = %v (%T), want a NoKindMatchError: %v", err, err, tc.kind)
			}
		})
	}
}

// createCRDs creates widgets.example.com (namespaced) and gizmos.other.io
// (cluster-scoped).
func (e *mapperEnv) createCRDs(t testing.TB) {
	t.Helper()
	createCRD(t, e.c, widgetCRD())
	createCRD(t, e.c, testCRD("other.io", "gizmos", "Gizmo", apiextensionsv1.ClusterScoped, []string{"gz"}))
}

func TestRESTMapperReset(t *testing.T) {
	e := newMapperEnv(t)
	if _, err := e.mapper.RESTMapping(widgetGK); !meta.IsNoMatchError(err) {
		t.Fatalf("before the CRD: %v", err)
	}
	e.createCRDs(t)
	e.mapper.Reset() // no clock step: Reset alone makes the next lookup read discovery
	if _, err := e.mapper.RESTMapping(widgetGK); err != nil {
		t.Errorf("after Reset: %v", err)
	}
}

func TestNewRESTMapperValidates(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  client.RESTMapperConfig
	}{
		{"no discovery", client.RESTMapperConfig{}},
		{"negative interval", client.RESTMapperConfig{Discovery: &client.DiscoveryClient{}, MinRefreshInterval: -time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := client.NewRESTMapper(tc.cfg); err == nil {
				t.Error("NewRESTMapper accepted an invalid config")
			}
		})
	}
}

// TestRESTMapperConcurrent runs many goroutines of hits, misses, clock steps
// and Resets at once (under -race), then checks every answer and that misses
// share refreshes instead of each reading discovery.
func TestRESTMapperConcurrent(t *testing.T) {
	e := newMapperEnv(t)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	e.createCRDs(t)

	// The cost of one refresh, in discovery requests.
	e.mapper.Reset()
	before := e.rt.discovery.Load()
	if _, err := e.mapper.RESTMapping(widgetGK); err != nil {
		t.Fatal(err)
	}
	perRefresh := e.rt.discovery.Load() - before

	const goroutines, rounds = 16, 40
	var resets, stepped atomic.Int64 // Reset calls; clock advance in seconds
	start := e.rt.discovery.Load()
	var wg sync.WaitGroup
	errs := make(chan error, goroutines) // one per goroutine at most
	for g := range goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(g)))
			for range rounds {
				var err error
				switch rng.IntN(6) {
				case 0:
					var r schema.GroupVersionResource
					if r, err = e.mapper.ResourceFor(schema.GroupVersionResource{Resource: "wd"}); err == nil && r != widgetsGVR {
						err = errors.New("wd mapped to " + r.String())
					}
				case 1:
					var r *meta.RESTMapping
					if r, err = e.mapper.RESTMapping(gizmoGK); err == nil && r.Scope.Name() != meta.RESTScopeNameRoot {
						err = errors.New("gizmos not cluster-scoped")
					}
				case 2:
					if _, err = e.mapper.RESTMapping(schema.GroupKind{Group: "nope.io", Kind: "Nope"}); meta.IsNoMatchError(err) {
						err = nil
					} else {
						err = errors.New("Nope found or failed: " + errString(err))
					}
				case 3:
					_, err = e.mapper.KindsFor(schema.GroupVersionResource{Resource: "deployments"})
				case 4:
					secs := rng.IntN(30)
					stepped.Add(int64(secs))
					e.clock.Step(time.Duration(secs) * time.Second)
				case 5:
					if rng.IntN(8) == 0 {
						resets.Add(1)
						e.mapper.Reset()
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Misses of "Nope" may refresh once per minute of fake time, and a
	// Reset causes one read; a read per miss would be far more.
	refreshes := (e.rt.discovery.Load() - start) / perRefresh
	if limit := 1 + resets.Load() + stepped.Load()/60; refreshes > limit {
		t.Errorf("%d refreshes (%d requests each); at most %d expected from %d Resets and %ds of clock steps",
			refreshes, perRefresh, limit, resets.Load(), stepped.Load())
	}
	t.Logf("%d refreshes, %d Resets, %ds stepped", refreshes, resets.Load(), stepped.Load())
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// TestRESTMapperDiscoveryFailures: a failed read is an error, not a miss;
// a partial one still maps what it has.
func TestRESTMapperDiscoveryFailures(t *testing.T) {
	var apisDown atomic.Bool
	apisDown.Store(true)
	c := fakeDiscoveryServer(t, func(path string) (any, int) {
		switch path {
		case "/api":
			return metav1.APIVersions{Versions: []string{"v1"}}, 0
		case "/apis":
			if apisDown.Load() {
				return nil, http.StatusInternalServerError
			}
			return metav1.APIGroupList{Groups: []metav1.APIGroup{{
				Name:             "broken.io",
				Versions:         []metav1.GroupVersionForDiscovery{{GroupVersion: "broken.io/v1", Version: "v1"}},
				PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "broken.io/v1", Version: "v1"},
			}}}, 0
		case "/api/v1":
			return metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", SingularName: "pod", Kind: "Pod", Namespaced: true}}}, 0
		}
		return nil, http.StatusServiceUnavailable
	})
	m, err := client.NewRESTMapper(client.RESTMapperConfig{Discovery: client.NewDiscovery(c)})
	if err != nil {
		t.Fatal(err)
	}

	_, err = m.RESTMapping(schema.GroupKind{Kind: "Pod"})
	if err == nil || meta.IsNoMatchError(err) || !apierrors.IsInternalError(err) {
		t.Fatalf("lookup with /apis failing = %v, want the discovery error", err)
	}

	apisDown.Store(false) // now only broken.io/v1 fails: a partial answer
	pods, err := m.RESTMapping(schema.GroupKind{Kind: "Pod"})
	if err != nil || pods.Resource.Resource != "pods" || pods.Scope.Name() != meta.RESTScopeNameNamespace {
		t.Errorf("pods from a partial answer = %+v, %v", pods, err)
	}
	if _, err := m.ResourceFor(schema.GroupVersionResource{Group: "broken.io", Resource: "things"}); !meta.IsNoMatchError(err) {
		t.Errorf("resource of the failed group = %v, want NoResourceMatch", err)
	}
}

// TestRESTMapperNamePrecedence: a resource's own name wins over another's
// short name, and the preferred version over the others whatever their order.
func TestRESTMapperNamePrecedence(t *testing.T) {
	docs := map[string]any{
		"/api": metav1.APIVersions{Versions: []string{"v1"}},
		"/apis": metav1.APIGroupList{Groups: []metav1.APIGroup{{
			Name: "x.io",
			Versions: []metav1.GroupVersionForDiscovery{
				{GroupVersion: "x.io/v1alpha1", Version: "v1alpha1"}, {GroupVersion: "x.io/v1", Version: "v1"},
			},
			PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "x.io/v1", Version: "v1"},
		}}},
		"/api/v1": metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", SingularName: "pod", Kind: "Pod", Namespaced: true},
		}},
		"/apis/x.io/v1alpha1": metav1.APIResourceList{GroupVersion: "x.io/v1alpha1", APIResources: []metav1.APIResource{
			{Name: "things", SingularName: "thing", Kind: "Thing", ShortNames: []string{"pods"}},
		}},
		"/apis/x.io/v1": metav1.APIResourceList{GroupVersion: "x.io/v1", APIResources: []metav1.APIResource{
			{Name: "things", SingularName: "thing", Kind: "Thing", ShortNames: []string{"pods"}},
			{Name: "things/status", Kind: "Thing"},
		}},
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, ok := docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		data, _ := utiljson.Marshal(v)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(data)
	}))
	t.Cleanup(hs.Close)
	c, err := client.New(client.Config{Host: hs.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	m, err := client.NewRESTMapper(client.RESTMapperConfig{Discovery: client.NewDiscovery(c)})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		input schema.GroupVersionResource
		want  schema.GroupVersionResource
	}{
		{"plural beats short name", schema.GroupVersionResource{Resource: "pods"}, schema.GroupVersionResource{Version: "v1", Resource: "pods"}},
		{"short name within a group", schema.GroupVersionResource{Group: "x.io", Resource: "pods"}, schema.GroupVersionResource{Group: "x.io", Version: "v1", Resource: "things"}},
		{"preferred version though listed second", schema.GroupVersionResource{Resource: "things"}, schema.GroupVersionResource{Group: "x.io", Version: "v1", Resource: "things"}},
		{"named version", schema.GroupVersionResource{Version: "v1alpha1", Resource: "thing"}, schema.GroupVersionResource{Group: "x.io", Version: "v1alpha1", Resource: "things"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := m.ResourceFor(tc.input)
			if err != nil || got != tc.want {
				t.Errorf("ResourceFor(%v) = %v, %v; want %v", tc.input, got, err, tc.want)
			}
		})
	}
	if _, err := m.ResourceFor(schema.GroupVersionResource{Resource: "things/status"}); !meta.IsNoMatchError(err) {
		t.Errorf("a subresource is mapped: %v", err)
	}
	mapping, err := m.RESTMapping(schema.GroupKind{Group: "x.io", Kind: "Thing"})
	if err != nil || mapping.Resource.Version != "v1" || mapping.Scope.Name() != meta.RESTScopeNameRoot {
		t.Errorf("Thing mapping = %+v, %v; want v1, cluster-scoped", mapping, err)
	}
}
