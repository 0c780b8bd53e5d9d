package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// kplaneCLI runs a kplane CLI command against p; it returns the combined
// output and whether the command succeeded.
func (p *upProcess) kplaneCLI(t *testing.T, args ...string) (string, bool) {
	t.Helper()
	cmd := exec.Command(kplaneBin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+p.kubeconfig)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err == nil
}

func (p *upProcess) mustCLI(t *testing.T, args ...string) string {
	t.Helper()
	out, ok := p.kplaneCLI(t, args...)
	if !ok {
		t.Fatalf("kplane %s failed:\n%s", strings.Join(args, " "), out)
	}
	return out
}

const cliManifest = `apiVersion: apps/v1
kind: Deployment
metadata: {name: api, labels: {app: api}}
spec:
  replicas: 2
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec: {containers: [{name: app, image: IMAGE}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: api-conf}
data: {mode: fast}
`

// kplane's own commands drive a Deployment through its life on kplane up.
func TestCLIDeploymentLifecycle(t *testing.T) {
	p := startUp(t, "--storage", "memory")
	manifest := filepath.Join(t.TempDir(), "api.yaml")
	write := func(image string) {
		if err := os.WriteFile(manifest, []byte(strings.ReplaceAll(cliManifest, "IMAGE", image)), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	write("app:v1")
	if got := p.mustCLI(t, "apply", "-f", manifest); got != "deployment.apps/api serverside-applied\nconfigmap/api-conf serverside-applied" {
		t.Fatalf("apply:\n%s", got)
	}
	if got := p.mustCLI(t, "rollout", "status", "deployment/api", "--timeout=30s"); !strings.HasSuffix(got, `deployment "api" successfully rolled out`) {
		t.Fatalf("rollout status:\n%s", got)
	}
	table := p.mustCLI(t, "get", "deployments")
	lines := strings.Split(table, "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME READY UP-TO-DATE AVAILABLE AGE" ||
		!strings.HasPrefix(strings.Join(strings.Fields(lines[1]), " "), "api 2/2 2 2 ") {
		t.Fatalf("get deployments:\n%s", table)
	}
	if got := p.mustCLI(t, "get", "pods", "-l", "app=api", "-o", "name"); len(strings.Fields(got)) != 2 || !strings.HasPrefix(got, "pod/api-") {
		t.Fatalf("get pods -o name:\n%s", got)
	}
	if got := p.mustCLI(t, "get", "cm", "api-conf", "-o", "yaml"); !strings.Contains(got, "mode: fast") || !strings.Contains(got, "kind: ConfigMap") {
		t.Fatalf("get cm -o yaml:\n%s", got)
	}

	write("app:v2")
	if got := p.mustCLI(t, "apply", "-f", manifest); got != "deployment.apps/api serverside-applied\nconfigmap/api-conf serverside-applied" {
		t.Fatalf("re-apply:\n%s", got)
	}
	p.mustCLI(t, "rollout", "status", "deploy/api", "--timeout=30s")
	if got := p.mustCLI(t, "rollout", "history", "deployment/api"); !strings.Contains(got, "\n1 ") || !strings.Contains(got, "\n2 ") {
		t.Fatalf("history:\n%s", got)
	}
	if got := p.mustCLI(t, "rollout", "undo", "deployment/api"); got != "deployment.apps/api rolled back" {
		t.Fatalf("undo: %s", got)
	}
	p.mustCLI(t, "rollout", "status", "deployment/api", "--timeout=30s")
	if got := p.mustCLI(t, "get", "deployment", "api", "-o", "json"); !strings.Contains(got, `"image": "app:v1"`) {
		t.Fatalf("image after undo is not app:v1:\n%s", got)
	}

	if got := p.mustCLI(t, "scale", "deployment/api", "--replicas=3"); got != "deployment.apps/api scaled" {
		t.Fatalf("scale: %s", got)
	}
	p.mustCLI(t, "rollout", "status", "deployment/api", "--timeout=30s")
	if got := p.mustCLI(t, "get", "pods", "-l", "app=api", "-o", "name"); len(strings.Fields(got)) != 3 {
		t.Fatalf("pods after scaling to 3:\n%s", got)
	}

	owned := strings.Fields(p.kubectlOrCLINames(t))
	if got := p.mustCLI(t, "delete", "deployment", "api"); got != `deployment.apps "api" deleted` {
		t.Fatalf("delete: %s", got)
	}
	if _, err := exec.LookPath("kubectl"); err == nil {
		p.kubectl(t, append([]string{"wait", "--for=delete", "--timeout=30s"}, owned...)...)
	}

	// Errors read as kubectl's do.
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "pods", "nope"}, `pods "nope" not found`},
		{[]string{"get", "widgets"}, `doesn't have a resource type "widgets"`},
		{[]string{"scale", "pod/x", "--replicas=1"}, `pods "x" not found`},
		{[]string{"scale", "namespace/default", "--replicas=1"}, "namespaces cannot be scaled: they have no scale subresource"},
		{[]string{"rollout", "undo", "deployment/missing"}, `deployments.apps "missing" not found`},
		{[]string{"get", "pods", "-o", "toml"}, "--output must be one of"},
	} {
		out, ok := p.kplaneCLI(t, tt.args...)
		if ok || !strings.Contains(out, tt.want) {
			t.Errorf("kplane %s: ok=%v, output %q, want a failure containing %q", strings.Join(tt.args, " "), ok, out, tt.want)
		}
	}
	p.stop(t)
}

// kubectlOrCLINames lists the ReplicaSets and pods of app=api by name.
func (p *upProcess) kubectlOrCLINames(t *testing.T) string {
	t.Helper()
	return p.mustCLI(t, "get", "rs", "-l", "app=api", "-o", "name") + "\n" + p.mustCLI(t, "get", "pods", "-l", "app=api", "-o", "name")
}
