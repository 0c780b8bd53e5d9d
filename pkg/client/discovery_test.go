package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/kplane/kplane/pkg/client"
)

func findGroup(groups []metav1.APIGroup, name string) *metav1.APIGroup {
	for i := range groups {
		if groups[i].Name == name {
			return &groups[i]
		}
	}
	return nil
}

func TestDiscovery(t *testing.T) {
	ctx := context.Background()
	c := startCRDServer(t)
	disc := client.NewDiscovery(c)

	before, err := disc.ServerGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(before.Groups) == 0 || before.Groups[0].Name != "" || before.Groups[0].PreferredVersion.GroupVersion != "v1" {
		t.Fatalf("first group = %+v, want the core group at v1", before.Groups)
	}
	if g := findGroup(before.Groups, "apps"); g == nil || g.PreferredVersion.GroupVersion != "apps/v1" {
		t.Errorf("apps group = %+v", g)
	}
	if g := findGroup(before.Groups, "example.com"); g != nil {
		t.Errorf("example.com served before its CRD: %+v", g)
	}

	createCRD(t, c, widgetCRD())
	after, err := disc.ServerGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	g := findGroup(after.Groups, "example.com")
	if g == nil {
		t.Fatalf("example.com not discovered once its CRD is established: %+v", after.Groups)
	}
	wantVersions := []metav1.GroupVersionForDiscovery{{GroupVersion: "example.com/v1", Version: "v1"}, {GroupVersion: "example.com/v1beta1", Version: "v1beta1"}}
	if diff := cmp.Diff(wantVersions, g.Versions); diff != "" || g.PreferredVersion.Version != "v1" {
		t.Errorf("example.com versions (-want +got):\n%s\npreferred %+v", diff, g.PreferredVersion)
	}

	resources, err := disc.ServerResourcesForGroupVersion(ctx, "example.com/v1")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]metav1.APIResource{}
	for _, r := range resources.APIResources {
		names[r.Name] = r
	}
	w, ok := names["widgets"]
	if !ok || w.Kind != "Widget" || !w.Namespaced || w.SingularName != "widget" ||
		!cmp.Equal(w.ShortNames, []string{"wd"}) || !cmp.Equal(w.Categories, []string{"all"}) {
		t.Errorf("widgets = %+v", w)
	}
	for _, sub := range []string{"widgets/status", "widgets/scale"} {
		if _, ok := names[sub]; !ok {
			t.Errorf("subresource %s not discovered: %v", sub, resources.APIResources)
		}
	}

	core, err := disc.ServerResourcesForGroupVersion(ctx, "v1")
	if err != nil || core.GroupVersion != "v1" || len(core.APIResources) == 0 {
		t.Errorf("core resources = %+v, %v", core, err)
	}

	groups, lists, err := disc.ServerGroupsAndResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != len(after.Groups) {
		t.Errorf("%d groups, ServerGroups has %d", len(groups), len(after.Groups))
	}
	gvs := map[string]bool{}
	for _, l := range lists {
		gvs[l.GroupVersion] = true
	}
	for _, gv := range []string{"v1", "apps/v1", "example.com/v1", "example.com/v1beta1"} {
		if !gvs[gv] {
			t.Errorf("ServerGroupsAndResources lacks %s: %v", gv, gvs)
		}
	}

	bad := []struct {
		name string
		gv   string
		is   func(error) bool
	}{
		{"unserved group", "nope.io/v1", apierrors.IsNotFound},
		{"unserved core version", "v9", apierrors.IsNotFound},
		{"empty", "", func(err error) bool { return err != nil }},
		{"malformed", "a/b/c", func(err error) bool { return err != nil }},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := disc.ServerResourcesForGroupVersion(ctx, tc.gv); !tc.is(err) {
				t.Errorf("ServerResourcesForGroupVersion(%q) = %v", tc.gv, err)
			}
		})
	}
}

// TestDiscoveryPartialFailure: a group version that cannot be read does not
// hide the others.
func TestDiscoveryPartialFailure(t *testing.T) {
	c := fakeDiscoveryServer(t, func(path string) (any, int) {
		switch path {
		case "/api":
			return metav1.APIVersions{Versions: []string{"v1"}}, 0
		case "/apis":
			return metav1.APIGroupList{Groups: []metav1.APIGroup{{
				Name:             "broken.io",
				Versions:         []metav1.GroupVersionForDiscovery{{GroupVersion: "broken.io/v1", Version: "v1"}},
				PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "broken.io/v1", Version: "v1"},
			}}}, 0
		case "/api/v1":
			return metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", Kind: "Pod", Namespaced: true}}}, 0
		}
		return nil, http.StatusServiceUnavailable
	})

	groups, lists, err := client.NewDiscovery(c).ServerGroupsAndResources(context.Background())
	var failed *client.GroupDiscoveryFailedError
	if !errors.As(err, &failed) {
		t.Fatalf("error = %v, want a GroupDiscoveryFailedError", err)
	}
	if gvErr := failed.Groups[schema.GroupVersion{Group: "broken.io", Version: "v1"}]; !apierrors.IsServiceUnavailable(gvErr) || len(failed.Groups) != 1 {
		t.Errorf("failed groups = %v", failed.Groups)
	}
	if len(groups) != 2 || len(lists) != 1 || lists[0].GroupVersion != "v1" {
		t.Errorf("partial answer: %d groups, lists %+v", len(groups), lists)
	}
}

// ServerPreferredResources takes each resource from the preferred version
// of its group, or from the first other version serving it, subresources
// with their resource; other groups are untouched and a broken one is
// reported without hiding the rest.
func TestServerPreferredResources(t *testing.T) {
	res := func(names ...string) []metav1.APIResource {
		var out []metav1.APIResource
		for _, n := range names {
			out = append(out, metav1.APIResource{Name: n, Kind: "K" + n})
		}
		return out
	}
	docs := map[string]any{
		"/api": metav1.APIVersions{Versions: []string{"v1"}},
		"/apis": metav1.APIGroupList{Groups: []metav1.APIGroup{{
			Name: "multi.io",
			Versions: []metav1.GroupVersionForDiscovery{
				{GroupVersion: "multi.io/v2", Version: "v2"}, {GroupVersion: "multi.io/v1", Version: "v1"}, {GroupVersion: "multi.io/v1beta1", Version: "v1beta1"}},
			PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "multi.io/v1", Version: "v1"},
		}, {
			Name:             "broken.io",
			Versions:         []metav1.GroupVersionForDiscovery{{GroupVersion: "broken.io/v1", Version: "v1"}},
			PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "broken.io/v1", Version: "v1"},
		}}},
		"/api/v1":                metav1.APIResourceList{GroupVersion: "v1", APIResources: res("pods", "pods/status")},
		"/apis/multi.io/v1":      metav1.APIResourceList{GroupVersion: "multi.io/v1", APIResources: res("alphas", "alphas/status")},
		"/apis/multi.io/v2":      metav1.APIResourceList{GroupVersion: "multi.io/v2", APIResources: res("alphas", "alphas/scale", "betas", "betas/status")},
		"/apis/multi.io/v1beta1": metav1.APIResourceList{GroupVersion: "multi.io/v1beta1", APIResources: res("betas", "gammas", "gammas/status", "orphans/status")},
	}
	c := fakeDiscoveryServer(t, func(path string) (any, int) {
		if v, ok := docs[path]; ok {
			return v, 0
		}
		return nil, http.StatusServiceUnavailable
	})

	lists, err := client.NewDiscovery(c).ServerPreferredResources(context.Background())
	var failed *client.GroupDiscoveryFailedError
	if !errors.As(err, &failed) || len(failed.Groups) != 1 {
		t.Fatalf("error = %v, want a GroupDiscoveryFailedError for broken.io alone", err)
	}
	got := map[string][]string{}
	for _, l := range lists {
		for _, r := range l.APIResources {
			got[l.GroupVersion] = append(got[l.GroupVersion], r.Name)
		}
	}
	want := map[string][]string{
		"v1":               {"pods", "pods/status"},
		"multi.io/v1":      {"alphas", "alphas/status"},
		"multi.io/v2":      {"betas", "betas/status"},
		"multi.io/v1beta1": {"gammas", "gammas/status"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("preferred resources (-want +got):\n%s", diff)
	}
}

// fakeDiscoveryServer serves the discovery documents serve returns for each
// path (status 0 means 200 with the document; any other status is an error
// answer) and returns a client of it.
func fakeDiscoveryServer(t *testing.T, serve func(path string) (doc any, status int)) *client.Client {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, status := serve(r.URL.Path)
		if status != 0 {
			http.Error(w, http.StatusText(status), status)
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
	return c
}
