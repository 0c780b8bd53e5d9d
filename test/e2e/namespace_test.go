package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// teamManifest is a namespace and its content in one file, the namespace
// first, as people write them.
const teamManifest = `apiVersion: v1
kind: Namespace
metadata: {name: team}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: conf, namespace: team}
data: {k: v}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: team}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: nginx}]
`

// On `kplane up`, kubectl deletes a manifest holding a namespace and its
// content: the namespace turns Terminating, the content is deleted, new
// content is refused, and the namespace controller then removes the
// namespace.
func TestUpDeleteNamespaceManifest(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl is not installed")
	}
	p := startUp(t)
	manifest := filepath.Join(t.TempDir(), "team.yaml")
	if err := os.WriteFile(manifest, []byte(teamManifest), 0o600); err != nil {
		t.Fatal(err)
	}
	p.kubectl(t, "apply", "-f", manifest)
	p.kubectl(t, "-n", "team", "rollout", "status", "deployment/web", "--timeout=30s")
	if got := p.kubectl(t, "get", "ns", "team", "-o", "jsonpath={.spec.finalizers}"); got != `["kubernetes"]` {
		t.Fatalf("spec.finalizers %s", got)
	}

	out := p.kubectl(t, "delete", "-f", manifest, "--wait=false")
	if !strings.Contains(out, `namespace "team" deleted`) || !strings.Contains(out, `configmap "conf" deleted`) || !strings.Contains(out, `deployment.apps "web" deleted`) {
		t.Fatalf("kubectl delete -f:\n%s", out)
	}
	if got := p.kubectl(t, "get", "ns", "team", "-o", "jsonpath={.status.phase}"); got != "Terminating" {
		t.Fatalf("namespace phase %q after delete", got)
	}
	cmd := exec.Command("kubectl", "-n", "team", "create", "configmap", "late")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+p.kubeconfig)
	refused, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(refused), `configmaps "late" is forbidden: unable to create new content in namespace team because it is being terminated`) {
		t.Fatalf("create in a terminating namespace: %v\n%s", err, refused)
	}

	p.kubectl(t, "wait", "--for=delete", "namespace/team", "--timeout=60s")
	if got := p.kubectl(t, "get", "pods,rs,cm", "-n", "team", "-o", "name"); got != "" {
		t.Fatalf("left in the deleted namespace:\n%s", got)
	}

	// The same manifest again, deleted as most people do: kubectl waits
	// until everything it deleted is gone.
	p.kubectl(t, "apply", "-f", manifest)
	out = p.kubectl(t, "delete", "-f", manifest, "--timeout=60s")
	for _, line := range []string{`namespace "team" deleted`, `configmap "conf" deleted`, `deployment.apps "web" deleted`} {
		if !strings.Contains(out, line) {
			t.Fatalf("kubectl delete -f (waiting):\n%s\nwant %s", out, line)
		}
	}
	if got := p.kubectl(t, "get", "ns", "-o", "name"); strings.Contains(got, "namespace/team") {
		t.Fatalf("namespace left after kubectl delete waited:\n%s", got)
	}
	p.stop(t)
}
