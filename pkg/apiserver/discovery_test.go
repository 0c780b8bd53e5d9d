package apiserver

import (
	"context"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"

	"github.com/kplane/kplane/pkg/registry"
	"github.com/kplane/kplane/pkg/storage/memory"
)

// kubectlDiscoveryAccept is what kubectl 1.3x sends to /api and /apis.
const kubectlDiscoveryAccept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"

func TestDiscovery(t *testing.T) {
	e := newTestEnv(t)
	var versions metav1.APIVersions
	r := e.do("GET", "/api", nil, "Accept", "application/json")
	r.expect(t, 200, "")
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("content type %q", ct)
	}
	r.decode(t, &versions)
	if len(versions.Versions) != 1 || versions.Versions[0] != "v1" {
		t.Fatalf("/api %+v", versions)
	}

	var groups metav1.APIGroupList
	e.do("GET", "/apis", nil, "Accept", "application/json").decode(t, &groups)
	names := []string{}
	for _, g := range groups.Groups {
		names = append(names, g.Name+"="+g.PreferredVersion.GroupVersion)
	}
	// kube-apiserver's order: by the priority of its APIServices.
	want := []string{"apps=apps/v1", "events.k8s.io=events.k8s.io/v1", "authentication.k8s.io=authentication.k8s.io/v1",
		"authorization.k8s.io=authorization.k8s.io/v1", "autoscaling=autoscaling/v2", "batch=batch/v1",
		"certificates.k8s.io=certificates.k8s.io/v1", "networking.k8s.io=networking.k8s.io/v1", "policy=policy/v1",
		"rbac.authorization.k8s.io=rbac.authorization.k8s.io/v1", "storage.k8s.io=storage.k8s.io/v1",
		"admissionregistration.k8s.io=admissionregistration.k8s.io/v1", "apiextensions.k8s.io=apiextensions.k8s.io/v1",
		"scheduling.k8s.io=scheduling.k8s.io/v1", "coordination.k8s.io=coordination.k8s.io/v1", "node.k8s.io=node.k8s.io/v1",
		"discovery.k8s.io=discovery.k8s.io/v1", "resource.k8s.io=resource.k8s.io/v1"}
	if !slices.Equal(names, want) {
		t.Fatalf("groups %v", names)
	}

	var group metav1.APIGroup
	e.do("GET", "/apis/apps", nil).decode(t, &group)
	if group.Name != "apps" || group.Kind != "APIGroup" {
		t.Fatalf("group %+v", group)
	}

	var core metav1.APIResourceList
	e.do("GET", "/api/v1", nil).decode(t, &core)
	byName := map[string]metav1.APIResource{}
	for _, r := range core.APIResources {
		byName[r.Name] = r
	}
	for name, want := range map[string]struct {
		kind       string
		namespaced bool
		short      string
	}{
		"pods": {"Pod", true, "po"}, "namespaces": {"Namespace", false, "ns"}, "nodes": {"Node", false, "no"},
		"configmaps": {"ConfigMap", true, "cm"}, "events": {"Event", true, "ev"}, "secrets": {"Secret", true, ""},
		"pods/status": {"Pod", true, ""}, "nodes/status": {"Node", false, ""},
	} {
		got, ok := byName[name]
		if !ok || got.Kind != want.kind || got.Namespaced != want.namespaced || (want.short != "" && (len(got.ShortNames) == 0 || got.ShortNames[0] != want.short)) {
			t.Errorf("%s: %+v", name, got)
		}
	}
	if len(byName["pods"].Verbs) != 8 {
		t.Errorf("pod verbs %v", byName["pods"].Verbs)
	}
	var apps metav1.APIResourceList
	e.do("GET", "/apis/apps/v1", nil).decode(t, &apps)
	found := false
	for _, r := range apps.APIResources {
		if r.Name == "deployments/scale" && r.Kind == "Scale" && r.Group == "autoscaling" {
			found = true
		}
	}
	if !found {
		t.Errorf("no deployments/scale in %+v", apps.APIResources)
	}
	e.do("GET", "/api", nil, "Accept", "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList").expect(t, 406, metav1.StatusReasonNotAcceptable)
	e.do("GET", "/apis/nope", nil).expect(t, 404, metav1.StatusReasonNotFound)
	e.do("GET", "/apis/apps/v2", nil).expect(t, 404, metav1.StatusReasonNotFound)
}

func TestVersionHealthAndRoot(t *testing.T) {
	e := newTestEnv(t)
	var v version.Info
	e.do("GET", "/version", nil).decode(t, &v)
	if v.Major != "1" || !strings.HasPrefix(v.GitVersion, "v1.") {
		t.Fatalf("version %+v", v)
	}
	for _, p := range []string{"/healthz", "/livez", "/readyz", "/readyz?verbose"} {
		r := e.do("GET", p, nil)
		if r.code != 200 || !strings.Contains(string(r.body), "ok") {
			t.Errorf("%s: %d %s", p, r.code, r.body)
		}
	}
	r := e.do("GET", "/", nil)
	if r.code != 200 || !strings.Contains(string(r.body), `"/apis/apps/v1"`) {
		t.Errorf("/: %s", r.body)
	}
	e.do("GET", "/nope", nil).expect(t, 404, metav1.StatusReasonNotFound)
	e.do("POST", "/version", "{}").expect(t, 405, metav1.StatusReasonMethodNotAllowed)
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := newTestEnv(t, func(c *Config) { c.Registerer, c.Gatherer = reg, reg })
	e.mustCreate(podPath("default", ""), testPod("p", nil), nil)
	e.do("GET", podPath("default", "p"), nil).expect(t, 200, "")
	e.do("GET", podPath("default", "nope"), nil).expect(t, 404, metav1.StatusReasonNotFound)
	r := e.do("GET", "/metrics", nil)
	body := string(r.body)
	for _, want := range []string{
		`apiserver_request_total{code="201",component="apiserver",group="",resource="pods",scope="namespace",subresource="",verb="POST",version="v1"} 1`,
		`apiserver_request_total{code="200",component="apiserver",group="",resource="pods",scope="resource",subresource="",verb="GET",version="v1"} 1`,
		`apiserver_request_total{code="404",component="apiserver",group="",resource="pods",scope="resource",subresource="",verb="GET",version="v1"} 1`,
		`apiserver_request_duration_seconds_count{component="apiserver",group="",resource="pods",scope="resource",subresource="",verb="GET",version="v1"} 2`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestRunServesAndShutsDown(t *testing.T) {
	backend, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Close()
	s, err := New(Config{Backend: backend, Admission: noServiceAccounts})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, ln) }()
	base := "http://" + ln.Addr().String()
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// An open watch must not hold up shutdown.
	watchResp, err := http.Get(base + "/api/v1/pods?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	defer watchResp.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Fatal("still serving after Run returned")
	}
}

// TestRunShutdownClosesFreshConnections holds a connection that never sends
// a request, as HTTP clients open ahead of need, and checks that Run still
// shuts down within a ShutdownTimeout shorter than the five seconds
// net/http's Shutdown would otherwise wait for it (Run would then fail
// with the deadline).
func TestRunShutdownClosesFreshConnections(t *testing.T) {
	backend, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Close()
	s, err := New(Config{Backend: backend, ShutdownTimeout: time.Second, Admission: noServiceAccounts})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, ln) }()
	// A served request proves the server is up before the idle connection.
	resp, err := http.Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	idle, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

func TestNewValidatesConfig(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Fatal("New without a Backend succeeded")
	}
	backend, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Close()
	if _, err := New(Config{Backend: backend, Registerer: prometheus.NewRegistry()}); err == nil {
		t.Fatal("New with a Registerer but no Gatherer succeeded")
	}
	// A second server on the same backend finds the namespaces in place.
	if _, err := New(Config{Backend: backend}); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Backend: backend}); err != nil {
		t.Fatalf("second server: %v", err)
	}
}

func TestOpenAPIServed(t *testing.T) {
	e := newTestEnv(t)
	r := e.do("GET", "/openapi/v2", nil, "Accept", "application/json")
	r.expect(t, 200, "")
	if !strings.Contains(string(r.body), `"io.k8s.api.apps.v1.Deployment"`) {
		t.Errorf("v2 document lacks Deployment")
	}
	r = e.do("GET", "/openapi/v3", nil)
	r.expect(t, 200, "")
	if !strings.Contains(string(r.body), `"apis/apps/v1"`) {
		t.Errorf("v3 index: %s", r.body)
	}
}

// panickingStrategy is a registry.Strategy whose defaulting panics.
type panickingStrategy struct{ registry.Strategy }

func (panickingStrategy) Default(runtime.Object) { panic("boom") }

func TestHandlerPanicIsInternalError(t *testing.T) {
	e := newTestEnv(t, func(c *Config) {
		c.Resources = registry.Builtin()
		for i, st := range c.Resources {
			if st.Info().Resource == "configmaps" {
				c.Resources[i] = panickingStrategy{st}
			}
		}
	})
	e.do("POST", "/api/v1/namespaces/default/configmaps", `{"metadata":{"name":"c"}}`).expect(t, 500, metav1.StatusReasonInternalError)
	e.do("GET", "/api/v1/namespaces/default/configmaps", nil).expect(t, 200, "")
}
