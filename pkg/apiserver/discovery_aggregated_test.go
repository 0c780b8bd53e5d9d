package apiserver

import (
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

const (
	aggregatedJSON     = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
	aggregatedProtobuf = "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
	aggregatedYAML     = "application/yaml;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
	// clientGoDiscoveryAccept is what client-go 1.37 sends to /api and /apis.
	clientGoDiscoveryAccept = aggregatedJSON + ",application/json"
)

// aggregated fetches path's aggregated document as JSON, checking the
// response's headers.
func (e *testEnv) aggregated(path string) (*apidiscoveryv2.APIGroupDiscoveryList, response) {
	e.t.Helper()
	r := e.do("GET", path, nil, "Accept", kubectlDiscoveryAccept)
	r.expect(e.t, 200, "")
	if ct := r.header.Get("Content-Type"); ct != aggregatedJSON {
		e.t.Fatalf("%s: Content-Type %q, want %q", path, ct, aggregatedJSON)
	}
	var list apidiscoveryv2.APIGroupDiscoveryList
	r.decode(e.t, &list)
	if list.APIVersion != "apidiscovery.k8s.io/v2" || list.Kind != "APIGroupDiscoveryList" {
		e.t.Fatalf("%s: type %+v", path, list.TypeMeta)
	}
	return &list, r
}

// findResource returns the resource of the aggregated list, nil if absent.
func findResource(list *apidiscoveryv2.APIGroupDiscoveryList, gv schema.GroupVersion, resource string) *apidiscoveryv2.APIResourceDiscovery {
	for _, g := range list.Items {
		if g.Name != gv.Group {
			continue
		}
		for _, v := range g.Versions {
			if v.Version != gv.Version {
				continue
			}
			for i := range v.Resources {
				if v.Resources[i].Resource == resource {
					return &v.Resources[i]
				}
			}
		}
	}
	return nil
}

func TestAggregatedDiscoveryCore(t *testing.T) {
	e := newTestEnv(t)
	list, _ := e.aggregated("/api")
	if len(list.Items) != 1 || list.Items[0].Name != "" || len(list.Items[0].Versions) != 1 {
		t.Fatalf("/api items %+v", list.Items)
	}
	v1 := list.Items[0].Versions[0]
	if v1.Version != "v1" || v1.Freshness != apidiscoveryv2.DiscoveryFreshnessCurrent {
		t.Errorf("version %q freshness %q", v1.Version, v1.Freshness)
	}
	if !slices.IsSortedFunc(v1.Resources, func(a, b apidiscoveryv2.APIResourceDiscovery) int { return strings.Compare(a.Resource, b.Resource) }) {
		t.Errorf("resources not sorted by name")
	}
	core := schema.GroupVersion{Version: "v1"}
	all := metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	sub := func(name, group, version, kind string, verbs ...string) apidiscoveryv2.APISubresourceDiscovery {
		return apidiscoveryv2.APISubresourceDiscovery{Subresource: name, ResponseKind: &metav1.GroupVersionKind{Group: group, Version: version, Kind: kind}, Verbs: verbs}
	}
	for _, want := range []apidiscoveryv2.APIResourceDiscovery{
		{
			Resource: "pods", ResponseKind: &metav1.GroupVersionKind{Kind: "Pod"}, Scope: apidiscoveryv2.ScopeNamespace, SingularResource: "pod",
			Verbs: all, ShortNames: []string{"po"}, Categories: []string{"all"},
			Subresources: []apidiscoveryv2.APISubresourceDiscovery{
				sub("binding", "", "", "Binding", "create"),
				sub("eviction", "policy", "v1", "Eviction", "create"),
				sub("status", "", "", "Pod", "get", "patch", "update"),
			},
		},
		{
			Resource: "namespaces", ResponseKind: &metav1.GroupVersionKind{Kind: "Namespace"}, Scope: apidiscoveryv2.ScopeCluster, SingularResource: "namespace",
			Verbs: metav1.Verbs{"create", "delete", "get", "list", "patch", "update", "watch"}, ShortNames: []string{"ns"},
			Subresources: []apidiscoveryv2.APISubresourceDiscovery{
				sub("finalize", "", "", "Namespace", "update"),
				sub("status", "", "", "Namespace", "get", "patch", "update"),
			},
		},
		{
			Resource: "replicationcontrollers", ResponseKind: &metav1.GroupVersionKind{Kind: "ReplicationController"}, Scope: apidiscoveryv2.ScopeNamespace,
			SingularResource: "replicationcontroller", Verbs: all, ShortNames: []string{"rc"}, Categories: []string{"all"},
			Subresources: []apidiscoveryv2.APISubresourceDiscovery{
				sub("scale", "autoscaling", "v1", "Scale", "get", "patch", "update"),
				sub("status", "", "", "ReplicationController", "get", "patch", "update"),
			},
		},
	} {
		got := findResource(list, core, want.Resource)
		if got == nil {
			t.Errorf("no %s in /api", want.Resource)
			continue
		}
		// Subresources the strategies add (pods/eviction, ...) are
		// checked against the legacy document below.
		got.Subresources = slices.DeleteFunc(got.Subresources, func(s apidiscoveryv2.APISubresourceDiscovery) bool {
			return !slices.ContainsFunc(want.Subresources, func(w apidiscoveryv2.APISubresourceDiscovery) bool { return w.Subresource == s.Subresource })
		})
		if diff := cmp.Diff(want, *got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", want.Resource, diff)
		}
	}
}

func TestAggregatedDiscoveryGroups(t *testing.T) {
	e := newTestEnv(t)
	list, _ := e.aggregated("/apis")
	var names []string
	for _, g := range list.Items {
		names = append(names, g.Name)
	}
	var legacy metav1.APIGroupList
	e.do("GET", "/apis", nil).decode(t, &legacy)
	var legacyNames []string
	for _, g := range legacy.Groups {
		legacyNames = append(legacyNames, g.Name)
	}
	if !slices.Equal(names, legacyNames) || names[0] != "apps" {
		t.Errorf("aggregated groups %v, legacy %v", names, legacyNames)
	}
	for _, g := range list.Items {
		if g.Name == "autoscaling" {
			var versions []string
			for _, v := range g.Versions {
				versions = append(versions, v.Version)
			}
			if !slices.Equal(versions, []string{"v2", "v1"}) {
				t.Errorf("autoscaling versions %v: the preferred one first, by priority", versions)
			}
		}
	}
	want := apidiscoveryv2.APIResourceDiscovery{
		Resource: "deployments", ResponseKind: &metav1.GroupVersionKind{Kind: "Deployment"}, Scope: apidiscoveryv2.ScopeNamespace,
		SingularResource: "deployment", Verbs: resourceVerbs, ShortNames: []string{"deploy"}, Categories: []string{"all"},
		Subresources: []apidiscoveryv2.APISubresourceDiscovery{
			{Subresource: "scale", ResponseKind: &metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}, Verbs: subresourceVerbs},
			{Subresource: "status", ResponseKind: &metav1.GroupVersionKind{Kind: "Deployment"}, Verbs: subresourceVerbs},
		},
	}
	if diff := cmp.Diff(&want, findResource(list, schema.GroupVersion{Group: "apps", Version: "v1"}, "deployments")); diff != "" {
		t.Errorf("deployments (-want +got):\n%s", diff)
	}
	if r := findResource(list, schema.GroupVersion{Group: "authorization.k8s.io", Version: "v1"}, "localsubjectaccessreviews"); r == nil ||
		r.Scope != apidiscoveryv2.ScopeNamespace || !slices.Equal(r.Verbs, []string{"create"}) {
		t.Errorf("localsubjectaccessreviews %+v", r)
	}
}

// flatten renders an aggregated version back into legacy entries, as
// client-go does.
func flatten(v apidiscoveryv2.APIVersionDiscovery) []metav1.APIResource {
	var out []metav1.APIResource
	for _, r := range v.Resources {
		ns := r.Scope == apidiscoveryv2.ScopeNamespace
		out = append(out, metav1.APIResource{Name: r.Resource, SingularName: r.SingularResource, Namespaced: ns, Kind: r.ResponseKind.Kind,
			Verbs: r.Verbs, ShortNames: r.ShortNames, Categories: r.Categories})
		for _, s := range r.Subresources {
			out = append(out, metav1.APIResource{Name: r.Resource + "/" + s.Subresource, Namespaced: ns, Group: s.ResponseKind.Group,
				Version: s.ResponseKind.Version, Kind: s.ResponseKind.Kind, Verbs: s.Verbs})
		}
	}
	slices.SortStableFunc(out, func(a, b metav1.APIResource) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// checkDocumentsAgree checks that every version of the aggregated documents
// lists what its legacy APIResourceList lists, and that the legacy
// documents list the same group versions in the same order.
func checkDocumentsAgree(t *testing.T, e *testEnv) {
	t.Helper()
	for _, path := range []string{"/api", "/apis"} {
		list, _ := e.aggregated(path)
		var legacyGroups []metav1.APIGroup
		if path == "/api" {
			legacyGroups = []metav1.APIGroup{{Versions: []metav1.GroupVersionForDiscovery{{GroupVersion: "v1", Version: "v1"}}}}
		} else {
			var groups metav1.APIGroupList
			e.do("GET", path, nil).decode(t, &groups)
			legacyGroups = groups.Groups
		}
		if len(legacyGroups) != len(list.Items) {
			t.Fatalf("%s: %d legacy groups, %d aggregated", path, len(legacyGroups), len(list.Items))
		}
		for i, g := range list.Items {
			lg := legacyGroups[i]
			if lg.Name != g.Name || len(lg.Versions) != len(g.Versions) {
				t.Fatalf("%s: group %d legacy %+v, aggregated %s with %d versions", path, i, lg, g.Name, len(g.Versions))
			}
			for j, v := range g.Versions {
				if lg.Versions[j].Version != v.Version {
					t.Errorf("%s: %s versions differ at %d: %s, %s", path, g.Name, j, lg.Versions[j].Version, v.Version)
					continue
				}
				var legacy metav1.APIResourceList
				p := "/apis/" + lg.Versions[j].GroupVersion
				if g.Name == "" {
					p = "/api/v1"
				}
				e.do("GET", p, nil).decode(t, &legacy)
				// The legacy entries of custom resources name no group or
				// version; the aggregated ones do.
				for k := range legacy.APIResources {
					if r := &legacy.APIResources[k]; r.Kind != "Scale" && r.Kind != "TokenRequest" && r.Kind != "Eviction" {
						r.Group, r.Version = "", ""
					}
				}
				got := flatten(v)
				for k := range got {
					if r := &got[k]; r.Group == g.Name && r.Version == v.Version {
						r.Group, r.Version = "", ""
					}
				}
				if diff := cmp.Diff(legacy.APIResources, got); diff != "" {
					t.Errorf("%s: legacy and aggregated differ (-legacy +aggregated):\n%s", p, diff)
				}
			}
		}
	}
}

func TestAggregatedDiscoveryAgreesWithLegacy(t *testing.T) {
	checkDocumentsAgree(t, newTestEnv(t))
}

func TestAggregatedDiscoveryTokenRequest(t *testing.T) {
	e, _ := newTokenEnv(t)
	admin := e.client(e.user("admin"))
	r := e.do(admin, "GET", "/api", nil, "Accept", clientGoDiscoveryAccept)
	var list apidiscoveryv2.APIGroupDiscoveryList
	r.decode(t, &list)
	sa := findResource(&list, schema.GroupVersion{Version: "v1"}, "serviceaccounts")
	if sa == nil {
		t.Fatalf("no serviceaccounts in %s", r.body)
	}
	want := apidiscoveryv2.APISubresourceDiscovery{Subresource: "token", ResponseKind: &metav1.GroupVersionKind{Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest"}, Verbs: []string{"create"}}
	if !slices.ContainsFunc(sa.Subresources, func(s apidiscoveryv2.APISubresourceDiscovery) bool { return cmp.Equal(s, want) }) {
		t.Errorf("serviceaccounts subresources %+v, want %+v among them", sa.Subresources, want)
	}
}

func TestDiscoveryNegotiation(t *testing.T) {
	e := newTestEnv(t)
	const (
		legacyJSON     = "application/json"
		legacyYAML     = "application/yaml"
		legacyProtobuf = "application/vnd.kubernetes.protobuf"
	)
	for _, tc := range []struct {
		name, accept string
		code         int
		contentType  string
	}{
		{"no Accept", "", 200, legacyJSON},
		{"plain JSON", "application/json", 200, legacyJSON},
		{"any", "*/*", 200, legacyJSON},
		{"kubectl 1.32", kubectlDiscoveryAccept, 200, aggregatedJSON},
		{"client-go 1.37", clientGoDiscoveryAccept, 200, aggregatedJSON},
		{"client-go 1.37 without peers", aggregatedJSON + ";profile=nopeer," + clientGoDiscoveryAccept, 200, aggregatedJSON},
		{"aggregated only", aggregatedJSON, 200, aggregatedJSON},
		{"parameters in another order", "application/json;as=APIGroupDiscoveryList;v=v2;g=apidiscovery.k8s.io", 200, aggregatedJSON},
		{"protobuf", aggregatedProtobuf + "," + aggregatedJSON + ",application/json", 200, aggregatedProtobuf},
		{"yaml", aggregatedYAML, 200, aggregatedYAML},
		{"any type of the aggregated kind", "*/*;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", 200, aggregatedJSON},
		{"application/* of the aggregated kind", "application/*;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", 200, aggregatedJSON},
		// kube-apiserver serves the aggregated document whenever any clause
		// asks for it, even one the client prefers less.
		{"aggregated after plain JSON", "application/json," + aggregatedJSON, 200, aggregatedJSON},
		{"aggregated at a lower q", "application/json;q=1," + aggregatedJSON + ";q=0.5", 200, aggregatedJSON},
		{"q orders the encodings", aggregatedJSON + ";q=0.5," + aggregatedProtobuf + ";q=0.9", 200, aggregatedProtobuf},
		{"q=0 is still a last resort", aggregatedJSON + ";q=0", 200, aggregatedJSON},
		{"v2beta1 falls back", "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json", 200, legacyJSON},
		{"legacy protobuf", "application/vnd.kubernetes.protobuf,application/json", 200, legacyProtobuf},
		{"legacy yaml", "application/yaml", 200, legacyYAML},
		{"v2beta1 only", "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList", 406, ""},
		{"another kind", "application/json;g=meta.k8s.io;v=v1;as=Table", 406, ""},
		{"unknown type", "text/html", 406, ""},
		{"server version", "application/json;sv=v1", 406, ""},
		{"a stream other than watch", "application/json;stream=chunks", 406, ""},
		{"watch stream of yaml", "application/yaml;stream=watch", 406, ""},
		{"malformed", "application", 406, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{"/api", "/apis"} {
				r := e.do("GET", path, nil, "Accept", tc.accept)
				if r.code != tc.code {
					t.Fatalf("%s: %d, want %d: %s", path, r.code, tc.code, r.body)
				}
				if tc.code == 406 {
					r.expect(t, 406, metav1.StatusReasonNotAcceptable)
					if st := r.status(t); st.Message != "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf" {
						t.Errorf("message %q", st.Message)
					}
					continue
				}
				if ct := r.header.Get("Content-Type"); ct != tc.contentType {
					t.Errorf("%s: Content-Type %q, want %q", path, ct, tc.contentType)
				}
				if aggregated := strings.Contains(tc.contentType, "as=APIGroupDiscoveryList"); aggregated != (r.header.Get("ETag") != "") {
					t.Errorf("%s: ETag %q on a response of type %s", path, r.header.Get("ETag"), tc.contentType)
				}
			}
		})
	}
	// Legacy documents below /apis negotiate the same way.
	if r := e.do("GET", "/apis/apps/v1", nil, "Accept", kubectlDiscoveryAccept); r.code != 200 || r.header.Get("Content-Type") != "application/json" {
		t.Errorf("/apis/apps/v1: %d %s", r.code, r.header.Get("Content-Type"))
	}
	e.do("GET", "/apis/apps", nil, "Accept", "text/html").expect(t, 406, metav1.StatusReasonNotAcceptable)
	e.do("POST", "/apis", nil, "Accept", aggregatedJSON).expect(t, 405, metav1.StatusReasonMethodNotAllowed)
}

func FuzzParseDiscoveryAccept(f *testing.F) {
	f.Add(kubectlDiscoveryAccept)
	f.Add("*/*;q=0.8, application/json;q=x;;=")
	f.Fuzz(func(t *testing.T, header string) {
		for _, c := range parseAccept(header) {
			if c.typ == "/" {
				t.Errorf("%q: empty clause", header)
			}
		}
		negotiateDiscovery(header, true)
		negotiateDiscovery(header, false)
	})
}

func TestAggregatedDiscoveryProtobuf(t *testing.T) {
	e := newTestEnv(t)
	want, jr := e.aggregated("/apis")
	r := e.do("GET", "/apis", nil, "Accept", aggregatedProtobuf)
	r.expect(t, 200, "")
	if r.header.Get("ETag") != jr.header.Get("ETag") {
		t.Errorf("ETag %s in protobuf, %s in JSON: it is the document's", r.header.Get("ETag"), jr.header.Get("ETag"))
	}
	scheme := runtime.NewScheme()
	if err := apidiscoveryv2.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	obj, gvk, err := protobuf.NewSerializer(scheme, scheme).Decode(r.body, nil, nil)
	if err != nil {
		t.Fatalf("decode protobuf: %v", err)
	}
	if *gvk != aggregatedDiscoveryGVK {
		t.Errorf("kind %v", gvk)
	}
	got := obj.(*apidiscoveryv2.APIGroupDiscoveryList)
	got.TypeMeta = want.TypeMeta
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("protobuf and JSON documents differ (-json +protobuf):\n%s", diff)
	}

	// The legacy documents too.
	r = e.do("GET", "/apis/apps/v1", nil, "Accept", "application/vnd.kubernetes.protobuf")
	legacyScheme := runtime.NewScheme()
	metav1.AddToGroupVersion(legacyScheme, schema.GroupVersion{Version: "v1"})
	obj, _, err = protobuf.NewSerializer(legacyScheme, legacyScheme).Decode(r.body, nil, nil)
	if err != nil {
		t.Fatalf("decode legacy protobuf: %v", err)
	}
	if l, ok := obj.(*metav1.APIResourceList); !ok || l.GroupVersion != "apps/v1" || len(l.APIResources) == 0 {
		t.Errorf("legacy protobuf document %#v", obj)
	}
}

func TestAggregatedDiscoveryETag(t *testing.T) {
	e := newTestEnv(t)
	list, r := e.aggregated("/apis")
	etag := r.header.Get("ETag")
	// kube-apiserver's: the quoted upper-case hex SHA-512 of the JSON of
	// the list without its type.
	list.TypeMeta = metav1.TypeMeta{}
	data, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	if want := strconv.Quote(fmt.Sprintf("%X", sha512.Sum512(data))); etag != want {
		t.Errorf("ETag %s, want %s", etag, want)
	}
	if r.header.Get("Vary") != "Accept" || r.header.Get("Cache-Control") != "public" {
		t.Errorf("Vary %q, Cache-Control %q", r.header.Get("Vary"), r.header.Get("Cache-Control"))
	}
	_, core := e.aggregated("/api")
	if core.header.Get("ETag") == etag {
		t.Errorf("/api and /apis have the same ETag")
	}

	r = e.do("GET", "/apis", nil, "Accept", kubectlDiscoveryAccept, "If-None-Match", etag)
	if r.code != 304 || len(r.body) != 0 || r.header.Get("ETag") != etag {
		t.Errorf("If-None-Match: %d %q ETag %q", r.code, r.body, r.header.Get("ETag"))
	}
	r = e.do("GET", "/apis", nil, "Accept", kubectlDiscoveryAccept, "If-None-Match", `"stale"`)
	if r.code != 200 || len(r.body) == 0 {
		t.Errorf("stale If-None-Match: %d", r.code)
	}
	// A legacy request ignores it.
	if r := e.do("GET", "/apis", nil, "If-None-Match", etag); r.code != 200 || r.header.Get("ETag") != "" {
		t.Errorf("legacy with If-None-Match: %d, ETag %q", r.code, r.header.Get("ETag"))
	}

	// Served from the cache until the resources change.
	if d1, d2 := e.server.discovery(), e.server.discovery(); d1 != d2 {
		t.Errorf("documents rebuilt without a change")
	}
}

func TestAggregatedDiscoveryCRD(t *testing.T) {
	e := newTestEnv(t)
	e.runControllers()
	_, r := e.aggregated("/apis")
	before := r.header.Get("ETag")

	e.createCRD(testCRD())
	list, r := e.aggregated("/apis")
	if r.header.Get("ETag") == before {
		t.Errorf("ETag unchanged by a new CRD")
	}
	if e.do("GET", "/apis", nil, "Accept", kubectlDiscoveryAccept, "If-None-Match", before).code != 200 {
		t.Errorf("the old ETag still matches")
	}
	last := list.Items[len(list.Items)-1]
	if last.Name != "example.com" {
		t.Fatalf("last group %q: custom groups come after the built-in ones", last.Name)
	}
	var versions []string
	for _, v := range last.Versions {
		versions = append(versions, v.Version)
	}
	if !slices.Equal(versions, []string{"v1", "v1beta1"}) {
		t.Errorf("versions %v", versions)
	}
	for _, v := range []string{"v1", "v1beta1"} {
		want := apidiscoveryv2.APIResourceDiscovery{
			Resource: "widgets", ResponseKind: &metav1.GroupVersionKind{Group: "example.com", Version: v, Kind: "Widget"},
			Scope: apidiscoveryv2.ScopeNamespace, SingularResource: "widget", Verbs: resourceVerbs, ShortNames: []string{"wd"}, Categories: []string{"all"},
			Subresources: []apidiscoveryv2.APISubresourceDiscovery{
				{Subresource: "scale", ResponseKind: &metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}, Verbs: subresourceVerbs},
				{Subresource: "status", ResponseKind: &metav1.GroupVersionKind{Group: "example.com", Version: v, Kind: "Widget"}, Verbs: subresourceVerbs},
			},
		}
		if diff := cmp.Diff(&want, findResource(list, schema.GroupVersion{Group: "example.com", Version: v}, "widgets")); diff != "" {
			t.Errorf("widgets %s (-want +got):\n%s", v, diff)
		}
	}
	checkDocumentsAgree(t, e)

	// A second CRD in the group, cluster-scoped, without subresources.
	gadgets := testCRD()
	gadgets.Name = "gadgets.example.com"
	gadgets.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Kind: "Gadget"}
	gadgets.Spec.Scope = apiextensionsv1.ClusterScoped
	gadgets.Spec.Versions = gadgets.Spec.Versions[:1]
	gadgets.Spec.Versions[0].Subresources = nil
	gadgets.Spec.Versions[0].AdditionalPrinterColumns = nil
	gadgets.Spec.Versions[0].SelectableFields = nil
	e.createCRD(gadgets)
	list, _ = e.aggregated("/apis")
	want := apidiscoveryv2.APIResourceDiscovery{
		Resource: "gadgets", ResponseKind: &metav1.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"},
		Scope: apidiscoveryv2.ScopeCluster, SingularResource: "gadget", Verbs: resourceVerbs,
	}
	if diff := cmp.Diff(&want, findResource(list, schema.GroupVersion{Group: "example.com", Version: "v1"}, "gadgets")); diff != "" {
		t.Errorf("gadgets (-want +got):\n%s", diff)
	}

	// Deleted, the CRDs leave discovery as soon as they are no longer served.
	for _, name := range []string{"widgets.example.com", "gadgets.example.com"} {
		if r := e.do("DELETE", crdPath+"/"+name, nil); r.code != 200 {
			t.Fatalf("delete %s: %d %s", name, r.code, r.body)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		list, _ = e.aggregated("/apis")
		if !slices.ContainsFunc(list.Items, func(g apidiscoveryv2.APIGroupDiscovery) bool { return g.Name == "example.com" }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("example.com still in discovery")
		}
		e.clock.Step(crdRetryDelay)
		time.Sleep(time.Millisecond) // let the server's CRD cleanup see the step
	}
	if _, r := e.aggregated("/apis"); r.header.Get("ETag") != before {
		t.Errorf("ETag %s after the CRDs left, %s before they came", r.header.Get("ETag"), before)
	}
	e.do("GET", "/apis/example.com", nil).expect(t, 404, metav1.StatusReasonNotFound)
	checkDocumentsAgree(t, e)
}

// BenchmarkAggregatedDiscovery measures a cached /apis document request,
// encoded (200) and revalidated (304).
func BenchmarkAggregatedDiscovery(b *testing.B) {
	e := newTestEnv(b)
	h := e.server.Handler()
	serve := func(b *testing.B, wantCode int, headers ...string) {
		req := httptest.NewRequest("GET", "/apis", nil)
		req.Header.Set("Accept", kubectlDiscoveryAccept)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		for b.Loop() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != wantCode {
				b.Fatalf("%d, want %d", w.Code, wantCode)
			}
		}
	}
	etag := e.server.discovery().groups.etag
	b.Run("200", func(b *testing.B) { serve(b, 200) })
	b.Run("304", func(b *testing.B) { serve(b, 304, "If-None-Match", etag) })
}
