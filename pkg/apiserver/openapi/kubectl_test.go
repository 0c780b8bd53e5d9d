package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// fakeAPIServer is just enough of an API server for kubectl apply and
// kubectl explain: legacy discovery built from servedKinds, the OpenAPI
// documents under test, and an in-memory store of Deployments in namespace
// "default" that answers get, create and strategic merge patch. It records
// every request so tests can see which documents kubectl used.
type fakeAPIServer struct {
	docs *Docs

	mu sync.Mutex
	// deployments holds stored objects by name.
	deployments map[string][]byte
	// requests lists "METHOD path?query" in arrival order.
	requests []string
	// patches lists the bodies of PATCH requests.
	patches []string
}

func (s *fakeAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests = append(s.requests, r.Method+" "+r.URL.RequestURI())
	s.mu.Unlock()
	if strings.HasPrefix(r.URL.Path, "/openapi/") {
		s.docs.ServeHTTP(w, r)
		return
	}
	writeJSON := func(code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(v)
	}
	const depPrefix = "/apis/apps/v1/namespaces/default/deployments"
	switch p := r.URL.Path; {
	case p == "/version":
		writeJSON(200, map[string]string{"major": "1", "minor": "37", "gitVersion": "v1.37.2"})
	case p == "/api":
		writeJSON(200, metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host}}})
	case p == "/apis":
		list := metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
		for _, g := range []string{"apps", "coordination.k8s.io"} {
			gv := metav1.GroupVersionForDiscovery{GroupVersion: g + "/v1", Version: "v1"}
			list.Groups = append(list.Groups, metav1.APIGroup{Name: g, Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv})
		}
		writeJSON(200, list)
	case p == "/api/v1" || p == "/apis/apps/v1" || p == "/apis/coordination.k8s.io/v1":
		gv := strings.TrimPrefix(strings.TrimPrefix(p, "/api/"), "/apis/")
		list := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv}
		for _, k := range servedKinds() {
			if k.GVK.GroupVersion().String() != gv {
				continue
			}
			verbs := metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
			list.APIResources = append(list.APIResources, metav1.APIResource{
				Name: k.Resource, SingularName: strings.ToLower(k.GVK.Kind), Namespaced: k.Namespaced, Kind: k.GVK.Kind, Verbs: verbs,
			})
			for _, sub := range k.Subresources {
				list.APIResources = append(list.APIResources, metav1.APIResource{
					Name: k.Resource + "/" + sub, Namespaced: k.Namespaced, Kind: k.GVK.Kind, Verbs: metav1.Verbs{"get", "patch", "update"},
				})
			}
		}
		writeJSON(200, list)
	case strings.HasPrefix(p, depPrefix):
		s.serveDeployments(w, r, strings.TrimPrefix(strings.TrimPrefix(p, depPrefix), "/"), writeJSON)
	default:
		writeJSON(404, notFound(p))
	}
}

func notFound(what string) *metav1.Status {
	return &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: "Failure",
		Reason: metav1.StatusReasonNotFound, Code: 404, Message: what + " not found"}
}

func (s *fakeAPIServer) serveDeployments(w http.ResponseWriter, r *http.Request, name string, writeJSON func(int, any)) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeJSON(400, err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	raw := func(code int, b []byte) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write(b)
	}
	switch {
	case r.Method == http.MethodGet && name != "":
		obj, ok := s.deployments[name]
		if !ok {
			writeJSON(404, notFound(`deployments.apps "`+name+`"`))
			return
		}
		raw(200, obj)
	case r.Method == http.MethodPost && name == "":
		var dep appsv1.Deployment
		if err := json.Unmarshal(body, &dep); err != nil {
			writeJSON(400, err.Error())
			return
		}
		dep.UID, dep.ResourceVersion = "uid-1", "1"
		stored, _ := json.Marshal(dep)
		s.deployments[dep.Name] = stored
		raw(201, stored)
	case r.Method == http.MethodPatch && name != "":
		obj, ok := s.deployments[name]
		if !ok {
			writeJSON(404, notFound(`deployments.apps "`+name+`"`))
			return
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/strategic-merge-patch+json" {
			writeJSON(415, "unexpected patch type "+ct)
			return
		}
		s.patches = append(s.patches, string(body))
		patched, err := strategicpatch.StrategicMergePatch(obj, body, appsv1.Deployment{})
		if err != nil {
			writeJSON(422, err.Error())
			return
		}
		s.deployments[name] = patched
		raw(200, patched)
	default:
		writeJSON(405, "method not allowed")
	}
}

// startKubectlEnv starts the fake server and returns a function running
// kubectl against it with its own kubeconfig and cache directory.
func startKubectlEnv(t *testing.T) (*fakeAPIServer, func(args ...string) string) {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed")
	}
	if testing.Short() {
		t.Skip("runs kubectl; skipped under -short")
	}
	fake := &fakeAPIServer{docs: newDocs(t), deployments: map[string][]byte{}}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: fake, cluster: {server: %q}}]
users: [{name: fake, user: {token: fake}}]
contexts: [{name: fake, context: {cluster: fake, user: fake, namespace: default}}]
current-context: fake
`, srv.URL)
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		args = append(args, "--kubeconfig="+kubeconfig, "--cache-dir="+filepath.Join(dir, "cache"))
		cmd := exec.CommandContext(ctx, kubectl, args...)
		cmd.Env = append(os.Environ(), "HOME="+dir, "KUBECONFIG="+kubeconfig)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("kubectl %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	return fake, run
}

func (s *fakeAPIServer) takeRequests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.requests
	s.requests = nil
	return out
}

func hasRequest(reqs []string, prefix string) bool {
	return slices.ContainsFunc(reqs, func(r string) bool { return strings.HasPrefix(r, prefix) })
}

const deploymentYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: %s
      - name: sidecar
        image: envoy:1
`

// TestKubectlApply runs kubectl apply twice against documents served by
// Docs: the first creates, the second must compute its strategic merge
// patch from the OpenAPI v3 document (merge by container name) and learn
// from it that the server validates fields, so that it never needs the v2
// document for client-side validation.
func TestKubectlApply(t *testing.T) {
	fake, kubectl := startKubectlEnv(t)
	dir := t.TempDir()
	manifest := filepath.Join(dir, "dep.yaml")
	write := func(image string) {
		if err := os.WriteFile(manifest, fmt.Appendf(nil, deploymentYAML, image), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	write("nginx:1")
	out := kubectl("apply", "-f", manifest)
	if !strings.Contains(out, "deployment.apps/web created") {
		t.Fatalf("first apply printed %q", out)
	}
	reqs := fake.takeRequests()
	if !hasRequest(reqs, "POST /apis/apps/v1/namespaces/default/deployments?fieldManager=kubectl-client-side-apply&fieldValidation=Strict") {
		t.Errorf("create did not ask for strict server-side field validation; requests:\n%s", strings.Join(reqs, "\n"))
	}

	write("nginx:2")
	out = kubectl("apply", "-f", manifest)
	if !strings.Contains(out, "deployment.apps/web configured") {
		t.Fatalf("second apply printed %q", out)
	}
	// kubectl caches documents by their hashed URL, so the first apply may
	// have fetched what the second uses.
	reqs = append(reqs, fake.takeRequests()...)
	if !hasRequest(reqs, "GET /openapi/v3/apis/apps/v1?hash=") {
		t.Errorf("kubectl did not read the apps/v1 OpenAPI v3 document; requests:\n%s", strings.Join(reqs, "\n"))
	}
	if hasRequest(reqs, "GET /openapi/v2") {
		t.Errorf("kubectl fell back to OpenAPI v2, so it found no usable v3 schema; requests:\n%s", strings.Join(reqs, "\n"))
	}
	fake.mu.Lock()
	patches := slices.Clone(fake.patches)
	stored := fake.deployments["web"]
	fake.mu.Unlock()
	if len(patches) != 1 {
		t.Fatalf("got %d patches, want 1", len(patches))
	}
	var patch map[string]any
	if err := json.Unmarshal([]byte(patches[0]), &patch); err != nil {
		t.Fatal(err)
	}
	spec := patch["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	wantSpec := map[string]any{
		"$setElementOrder/containers": []any{map[string]any{"name": "app"}, map[string]any{"name": "sidecar"}},
		"containers":                  []any{map[string]any{"name": "app", "image": "nginx:2"}},
	}
	if got, _ := json.Marshal(spec); string(got) != mustJSON(t, wantSpec) {
		t.Errorf("patched pod spec = %s, want %s", got, mustJSON(t, wantSpec))
	}
	var dep appsv1.Deployment
	if err := json.Unmarshal(stored, &dep); err != nil {
		t.Fatal(err)
	}
	if c := dep.Spec.Template.Spec.Containers; len(c) != 2 || c[0].Image != "nginx:2" || c[1].Image != "envoy:1" {
		t.Errorf("stored containers = %+v", c)
	}
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestKubectlExplain checks kubectl explain over both document versions.
func TestKubectlExplain(t *testing.T) {
	_, kubectl := startKubectlEnv(t)
	tests := []struct {
		args []string
		want []string // regular expressions, each matching a line
	}{
		{
			args: []string{"explain", "pod.spec"},
			want: []string{`^KIND:\s+Pod$`, `^VERSION:\s+v1$`, `^FIELD: spec <PodSpec>$`, `^\s+containers\s+<\[\]Container> -required-$`, `^\s+nodeName\s+<string>$`},
		},
		{
			args: []string{"explain", "deployment.spec.template.spec.containers"},
			want: []string{`^GROUP:\s+apps$`, `^FIELD: containers <\[\]Container>$`, `^\s+name\s+<string> -required-$`, `^\s+ports\s+<\[\]ContainerPort>$`},
		},
		{
			args: []string{"explain", "deployment.spec.strategy.rollingUpdate.maxSurge"},
			want: []string{`^FIELD: maxSurge <IntOrString>$`},
		},
		{
			args: []string{"explain", "lease.spec.renewTime"},
			want: []string{`^FIELD: renewTime <string>$`, `^\s+renewTime is a time when the current holder of a lease has last updated the$`},
		},
		{
			args: []string{"explain", "pod.spec", "--output=plaintext-openapiv2"},
			want: []string{`^KIND:\s+Pod$`, `^RESOURCE: spec <Object>$`, `^\s+containers\s+<\[\]Object> -required-$`},
		},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out := kubectl(tt.args...)
			for _, w := range tt.want {
				if !regexp.MustCompile(`(?m)` + w).MatchString(out) {
					t.Errorf("output lacks a line matching %s:\n%s", w, out)
				}
			}
		})
	}
}
