package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// kplaneBin is the binary built once by TestMain for every test.
var kplaneBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kplane-e2e-")
	if err != nil {
		panic(err)
	}
	kplaneBin = filepath.Join(dir, "kplane")
	out, err := exec.Command("go", "build", "-o", kplaneBin, "github.com/kplane/kplane/cmd/kplane").CombinedOutput()
	if err != nil {
		_ = os.RemoveAll(dir)
		panic(fmt.Sprintf("build kplane: %v\n%s", err, out))
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { _ = os.RemoveAll(dir) }))
}

// startupWait bounds how long the binary may take to print its URL; it
// fails a test, it never paces one.
const startupWait = 60 * time.Second

// buildKplane returns the binary TestMain built.
func buildKplane(t *testing.T) string {
	t.Helper()
	return kplaneBin
}

// apiserver is a running `kplane apiserver`.
type apiserver struct {
	*process
	url        string
	kubeconfig string
	// http trusts the server's CA and presents the admin certificate,
	// as the written kubeconfig does.
	http *http.Client
}

// startAPIServer runs the binary on a free loopback port and waits for it
// to print the URL it serves.
func startAPIServer(t *testing.T, bin string, args ...string) *apiserver {
	t.Helper()
	if bin != kplaneBin {
		t.Fatalf("startAPIServer runs the binary TestMain built, not %s", bin)
	}
	dir := t.TempDir()
	for i, a := range args {
		if a == "--data-dir" && i+1 < len(args) {
			dir = args[i+1]
		}
	}
	s := &apiserver{kubeconfig: filepath.Join(dir, "kubeconfig")}
	s.process = startProcess(t, "kplane apiserver", append([]string{"apiserver", "--port", "0", "--data-dir", dir}, args...), func(line string) bool {
		u, ok := strings.CutPrefix(line, "kplane apiserver serving on ")
		if ok {
			s.url = u
		}
		return ok
	})
	s.http = adminHTTPClient(t, filepath.Join(dir, "pki"))
	return s
}

// adminHTTPClient is an HTTP client that trusts the CA in pkiDir and
// presents its admin certificate; over plain HTTP it is a plain client.
func adminHTTPClient(t *testing.T, pkiDir string) *http.Client {
	t.Helper()
	tr := &http.Transport{ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	caPEM, err := os.ReadFile(filepath.Join(pkiDir, "ca.crt"))
	if err != nil {
		return &http.Client{Transport: tr}
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("bad CA PEM")
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(pkiDir, "admin.crt"), filepath.Join(pkiDir, "admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}
	return &http.Client{Transport: tr}
}

type testWriter struct{ t *testing.T }

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func (s *apiserver) get(t *testing.T, path string, out any) int {
	t.Helper()
	resp, err := s.http.Get(s.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("decode %s: %v", data, err)
		}
	}
	return resp.StatusCode
}

func TestAPIServerBinary(t *testing.T) {
	bin := buildKplane(t)
	s := startAPIServer(t, bin)
	if !strings.HasPrefix(s.url, "https://") {
		t.Fatalf("serves %s: HTTPS is the default", s.url)
	}
	if code := s.get(t, "/readyz", nil); code != 200 {
		t.Fatalf("readyz %d", code)
	}
	var nsList struct {
		Items []struct {
			Metadata struct{ Name string } `json:"metadata"`
		} `json:"items"`
	}
	s.get(t, "/api/v1/namespaces", &nsList)
	var names []string
	for _, ns := range nsList.Items {
		names = append(names, ns.Metadata.Name)
	}
	if strings.Join(names, ",") != "default,kube-node-lease,kube-public,kube-system" {
		t.Fatalf("namespaces %v", names)
	}
	kc, err := os.ReadFile(s.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(kc), "server: "+s.url) || !strings.Contains(string(kc), "current-context: kplane") {
		t.Fatalf("kubeconfig:\n%s", kc)
	}
	t.Run("kubectl", func(t *testing.T) { runKubectl(t, s) })
	s.stop(t)
}

const manifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {tier: fe}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.25
`

func runKubectl(t *testing.T, s *apiserver) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed; the API is covered by the HTTP checks")
	}
	run := func(stdin string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), startupWait)
		defer cancel()
		cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", s.kubeconfig}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if out := run(manifest, "apply", "-f", "-"); !strings.Contains(out, "deployment.apps/web created") {
		t.Fatalf("apply: %s", out)
	}
	if out := run(strings.Replace(manifest, "replicas: 2", "replicas: 3", 1), "apply", "-f", "-"); !strings.Contains(out, "configured") {
		t.Fatalf("second apply: %s", out)
	}
	if out := run("", "get", "deploy", "web", "-o", "jsonpath={.spec.replicas}/{.metadata.generation}"); out != "3/2" {
		t.Fatalf("replicas/generation %q", out)
	}
	run("", "scale", "deploy", "web", "--replicas=5")
	out := run("", "get", "deployments")
	if !strings.Contains(out, "UP-TO-DATE") || !strings.Contains(out, "0/5") {
		t.Fatalf("get deployments:\n%s", out)
	}
	run("", "create", "configmap", "settings", "--from-literal=mode=fast")
	if out := run("", "get", "cm", "settings", "-o", "jsonpath={.data.mode}"); out != "fast" {
		t.Fatalf("configmap %q", out)
	}
	if out := run("", "get", "deploy", "-l", "tier=fe", "-o", "name"); strings.TrimSpace(out) != "deployment.apps/web" {
		t.Fatalf("label selector: %q", out)
	}
	run("", "delete", "deploy", "web")
	if out := run("", "get", "deploy", "-o", "name"); strings.TrimSpace(out) != "" {
		t.Fatalf("after delete: %q", out)
	}
	if out := run("", "api-resources", "--api-group=apps", "-o", "name"); !strings.Contains(out, "deployments.apps") {
		t.Fatalf("api-resources: %s", out)
	}
}

func TestAPIServerFlagsFailClearly(t *testing.T) {
	bin := buildKplane(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"apiserver", "--storage=disk"}, "--storage must be memory or etcd"},
		{[]string{"apiserver", "--port=99999"}, "out of range"},
		{[]string{"apiserver", "--bind-address=nope"}, "not an IP address"},
		{[]string{"apiserver", "--etcd-certfile=c.pem", "--data-dir", "-unused-"}, "need --etcd-servers"},
		{[]string{"apiserver", "--etcd-servers=https://127.0.0.1:1", "--etcd-cafile=/nonexistent/ca.pem", "--data-dir", "-unused-"}, "etcd TLS"},
		{[]string{"apiserver", "--insecure-http", "--tls-cert-file=c.pem", "--data-dir", "-unused-"}, "--insecure-http excludes"},
		{[]string{"apiserver", "--audit-log-path=audit.log", "--data-dir", "-unused-"}, "go together"},
		{[]string{"apiserver", "--max-requests-inflight=-1", "--data-dir", "-unused-"}, "must not be negative"},
	} {
		out, err := exec.Command(bin, tc.args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("%v: err %v output %s", tc.args, err, out)
		}
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "kplane ") {
		t.Errorf("version: %v %s", err, out)
	}
}

func TestAPIServerEmbeddedEtcdKeepsData(t *testing.T) {
	if testing.Short() {
		t.Skip("starts embedded etcd twice")
	}
	bin := buildKplane(t)
	dir := t.TempDir()
	s := startAPIServer(t, bin, "--storage=etcd", "--data-dir", dir)
	if _, err := os.Stat(filepath.Join(dir, "etcd")); err != nil {
		t.Fatalf("no etcd data in the data dir: %v", err)
	}
	body := `{"metadata":{"name":"kept"},"data":{"k":"v"}}`
	resp, err := s.http.Post(s.url+"/api/v1/namespaces/default/configmaps", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("create %d", resp.StatusCode)
	}
	s.stop(t)
	s = startAPIServer(t, bin, "--storage=etcd", "--data-dir", dir)
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if code := s.get(t, "/api/v1/namespaces/default/configmaps/kept", &cm); code != 200 || cm.Data["k"] != "v" {
		t.Fatalf("after restart: %d %v", code, cm.Data)
	}
	if kubectl, err := exec.LookPath("kubectl"); err == nil {
		// kubectl pages and watches from etcd (through the watch cache).
		// kube-system holds the authentication ConfigMap the server
		// publishes for extension API servers, as kube-apiserver's does.
		out, err := exec.Command(kubectl, "--kubeconfig", s.kubeconfig, "get", "configmaps,namespaces", "-A", "--chunk-size=1", "-o", "name").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "configmap/kept\nconfigmap/extension-apiserver-authentication\nnamespace/default\nnamespace/kube-node-lease\nnamespace/kube-public\nnamespace/kube-system") {
			t.Fatalf("kubectl get over etcd: %v\n%s", err, out)
		}
		out, err = exec.Command(kubectl, "--kubeconfig", s.kubeconfig, "get", "cm", "kept", "-w", "--request-timeout=1s", "-o", "jsonpath={.data.k}").CombinedOutput()
		if !strings.HasPrefix(string(out), "v") {
			t.Fatalf("kubectl get -w over etcd: %v\n%s", err, out)
		}
	}
	s.stop(t)
}

func TestAPIServerTLS(t *testing.T) {
	bin := buildKplane(t)
	dir := t.TempDir()
	s := startAPIServer(t, bin, "--data-dir", dir, "--tls-san", "kplane.test")
	if !strings.HasPrefix(s.url, "https://") {
		t.Fatalf("url %s", s.url)
	}
	for _, name := range []string{"kubeconfig", "controller-manager.kubeconfig", "node.kubeconfig", "pki/ca.key", "pki/server.key", "pki/admin.key", "pki/controller-manager.key", "pki/node.key"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, want a 0600 file", name, err)
		}
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("bad CA PEM")
	}
	admin, err := tls.LoadX509KeyPair(filepath.Join(dir, "pki", "admin.crt"), filepath.Join(dir, "pki", "admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{admin}}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(s.url + "/api/v1/namespaces/default")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ProtoMajor != 2 {
		t.Fatalf("%d over %s", resp.StatusCode, resp.Proto)
	}
	// Untrusted clients are refused.
	tr2 := &http.Transport{}
	defer tr2.CloseIdleConnections()
	if _, err := (&http.Client{Transport: tr2}).Get(s.url + "/healthz"); err == nil {
		t.Fatal("a client without the CA connected")
	}
	// A client that trusts the server but has no credentials is refused.
	tr3 := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	defer tr3.CloseIdleConnections()
	resp, err = (&http.Client{Transport: tr3}).Get(s.url + "/api/v1/namespaces/default")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a client without credentials: %d, want 401", resp.StatusCode)
	}
	if kubectl, err := exec.LookPath("kubectl"); err == nil {
		out, err := exec.Command(kubectl, "--kubeconfig", s.kubeconfig, "get", "namespaces", "-o", "name").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "namespace/kube-system") {
			t.Fatalf("kubectl over TLS: %v\n%s", err, out)
		}
		// The admin client certificate is who kubectl is.
		out, err = exec.Command(kubectl, "--kubeconfig", s.kubeconfig, "auth", "whoami").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "kplane-admin") || !strings.Contains(string(out), "[system:masters system:authenticated]") {
			t.Fatalf("kubectl auth whoami over TLS: %v\n%s", err, out)
		}
	}
	s.stop(t)
}

// TestAPIServerInsecureHTTP checks that plain HTTP is served only when
// asked for, and that the written kubeconfig then holds no credentials.
func TestAPIServerInsecureHTTP(t *testing.T) {
	dir := t.TempDir()
	s := startAPIServer(t, buildKplane(t), "--insecure-http", "--storage", "memory", "--data-dir", dir)
	if !strings.HasPrefix(s.url, "http://") {
		t.Fatalf("url %s", s.url)
	}
	if code := s.get(t, "/api/v1/namespaces/default", nil); code != 200 {
		t.Fatalf("get %d", code)
	}
	kc, err := os.ReadFile(s.kubeconfig)
	if err != nil || strings.Contains(string(kc), "client-key-data") {
		t.Fatalf("kubeconfig %v:\n%s", err, kc)
	}
	if _, err := os.Stat(filepath.Join(dir, "pki")); err == nil {
		t.Error("plain HTTP created certificates")
	}
	s.stop(t)
}
