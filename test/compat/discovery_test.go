package compat

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
)

// discoveryLog records the requests a client sends and the Content-Type of
// the answers.
type discoveryLog struct {
	next http.RoundTripper

	mu       sync.Mutex
	requests []string // "GET /apis application/json;g=..."
}

func (l *discoveryLog) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(r)
	entry := r.Method + " " + r.URL.Path
	if err == nil {
		entry += " " + resp.Header.Get("Content-Type")
	}
	l.mu.Lock()
	l.requests = append(l.requests, entry)
	l.mu.Unlock()
	return resp, err
}

// take returns the requests logged since the last call.
func (l *discoveryLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.requests
	l.requests = nil
	return out
}

// loggedDiscovery returns a discovery client for srv whose requests log
// records.
func loggedDiscovery(t *testing.T, srv *server) (*discovery.DiscoveryClient, *discoveryLog) {
	t.Helper()
	log := &discoveryLog{}
	cfg := srv.restConfig()
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { log.next = rt; return log }
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return disc, log
}

const aggregatedContentType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// wantAggregated fails unless requests are exactly the two aggregated ones.
func wantAggregated(t *testing.T, requests []string) {
	t.Helper()
	want := []string{"GET /api " + aggregatedContentType, "GET /apis " + aggregatedContentType}
	if !slices.Equal(requests, want) {
		t.Errorf("requests:\n  %s\nwant the two aggregated ones:\n  %s", strings.Join(requests, "\n  "), strings.Join(want, "\n  "))
	}
}

// resourcesByGroupVersion keys discovered resources by group version,
// dropping what only one of the documents carries: the group and version
// a resource's own entry names (aggregated entries of custom resources do).
func resourcesByGroupVersion(lists []*metav1.APIResourceList) map[string][]metav1.APIResource {
	out := map[string][]metav1.APIResource{}
	for _, l := range lists {
		var rs []metav1.APIResource
		for _, r := range l.APIResources {
			if !strings.Contains(r.Name, "/") {
				r.Group, r.Version = "", ""
			} else {
				// client-go gives subresources their parent's singular name.
				r.SingularName = ""
			}
			rs = append(rs, r)
		}
		slices.SortFunc(rs, func(a, b metav1.APIResource) int { return strings.Compare(a.Name, b.Name) })
		out[l.GroupVersion] = rs
	}
	return out
}

// TestAggregatedDiscoveryClientGo checks that client-go's discovery client
// gets everything from the two aggregated documents, and that they say
// what the legacy documents say.
func TestAggregatedDiscoveryClientGo(t *testing.T) {
	srv := startServer(t)
	disc, log := loggedDiscovery(t, srv)
	groups, lists, err := disc.ServerGroupsAndResources()
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	wantAggregated(t, log.take())
	if len(groups) < 10 || groups[0].Name != "" || groups[1].Name != "apps" {
		t.Errorf("groups %d, first %q %q", len(groups), groups[0].Name, groups[1].Name)
	}
	got := resourcesByGroupVersion(lists)
	var scale *metav1.APIResource
	for i, r := range got["apps/v1"] {
		if r.Name == "deployments/scale" {
			scale = &got["apps/v1"][i]
		}
	}
	if scale == nil || scale.Group != "autoscaling" || scale.Version != "v1" || scale.Kind != "Scale" {
		t.Errorf("deployments/scale %+v", scale)
	}

	legacy, legacyLog := loggedDiscovery(t, srv)
	legacy.UseLegacyDiscovery = true
	_, legacyLists, err := legacy.ServerGroupsAndResources()
	if err != nil {
		t.Fatalf("legacy discovery: %v", err)
	}
	if n := len(legacyLog.take()); n != 2+len(lists) {
		t.Errorf("legacy discovery took %d requests for %d group versions", n, len(lists))
	}
	if diff := cmp.Diff(resourcesByGroupVersion(legacyLists), got); diff != "" {
		t.Errorf("legacy and aggregated discovery differ (-legacy +aggregated):\n%s", diff)
	}

	for _, g := range groups {
		if g.Name == "autoscaling" && g.PreferredVersion.Version != "v2" {
			t.Errorf("autoscaling prefers %s", g.PreferredVersion.Version)
		}
	}
}

// TestAggregatedDiscoveryRESTMapper checks client-go's memory-cached REST
// mapper: two requests fill it, and a CRD created later is found after the
// mapper resets on the miss, with two requests more.
func TestAggregatedDiscoveryRESTMapper(t *testing.T) {
	srv := startServer(t)
	disc, log := loggedDiscovery(t, srv)
	cached := memory.NewMemCacheClient(disc)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(cached)

	m, err := mapper.RESTMapping(schema.GroupKind{Group: "apps", Kind: "Deployment"})
	if err != nil {
		t.Fatalf("mapping: %v", err)
	}
	if m.Resource != (schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}) || m.Scope.Name() != "namespace" {
		t.Errorf("deployments mapping %+v", m)
	}
	if _, err := mapper.RESTMapping(schema.GroupKind{Kind: "Node"}); err != nil {
		t.Errorf("nodes: %v", err)
	}
	if gvr, err := mapper.ResourceFor(schema.GroupVersionResource{Resource: "deploy"}); err == nil {
		t.Errorf("short name resolved as a resource: %v", gvr)
	}
	wantAggregated(t, log.take())

	cs, err := apiextensionsclient.NewForConfig(srv.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	crd := compatCRD()
	if _, err := cs.ApiextensionsV1().CustomResourceDefinitions().Create(context.Background(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CRD: %v", err)
	}
	waitEstablished(t, cs, crd.Name)
	// Like kubectl and controller-runtime, reset the cache on a miss.
	if _, err := mapper.RESTMapping(schema.GroupKind{Group: "db.example.com", Kind: "Database"}); err == nil {
		t.Errorf("the cached mapper found a kind created after it filled")
	}
	mapper.Reset()
	m, err = mapper.RESTMapping(schema.GroupKind{Group: "db.example.com", Kind: "Database"})
	if err != nil {
		t.Fatalf("mapping of the new CRD: %v", err)
	}
	if m.Resource != (schema.GroupVersionResource{Group: "db.example.com", Version: "v1", Resource: "databases"}) {
		t.Errorf("databases mapping %+v", m)
	}
	wantAggregated(t, log.take())

	// The expander kubectl uses finds the CRD's short name.
	expander := restmapper.NewShortcutExpander(mapper, cached, nil)
	if gvr, err := expander.ResourceFor(schema.GroupVersionResource{Resource: "dbs"}); err != nil || gvr.Resource != "databases" {
		t.Errorf("short name dbs: %v %v", gvr, err)
	}
}
