package e2e

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// upProcess is a running `kplane up`.
type upProcess struct {
	*process
	kubeconfig string
	healthURL  string
}

// startUp runs `kplane up` on free loopback ports and waits until it says
// the control plane is up.
func startUp(t *testing.T, args ...string) *upProcess {
	t.Helper()
	dir := t.TempDir()
	p := &upProcess{kubeconfig: filepath.Join(dir, "kubeconfig")}
	p.process = startProcess(t, "kplane up", append([]string{"up", "--port", "0", "--health-address", "127.0.0.1:0", "--data-dir", dir}, args...), func(line string) bool {
		if _, addr, ok := strings.Cut(line, "health and metrics on "); ok {
			p.healthURL = addr
		}
		return strings.HasPrefix(line, "kplane is up.")
	})
	if p.healthURL == "" {
		t.Fatal("kplane up did not print its health address before saying it was up")
	}
	return p
}

// kubectl runs kubectl against p and returns its trimmed output; it fails
// the test if kubectl fails.
func (p *upProcess) kubectl(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("kubectl", args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+p.kubeconfig)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func (p *upProcess) httpGet(t *testing.T, path string) (int, string) {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	defer c.CloseIdleConnections()
	resp, err := c.Get(p.healthURL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// `kplane up` runs a control plane on which kubectl rolls a Deployment out,
// updates, scales and deletes it, with the garbage collector removing what
// the Deployment owned.
func TestUpDeploymentLifecycle(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl is not installed")
	}
	p := startUp(t)

	if code, body := p.httpGet(t, "/healthz"); code != 200 || body != "ok" {
		t.Fatalf("/healthz: %d %q", code, body)
	}

	// The simulated nodes register one after another once the node
	// simulator starts, which may be after "kplane is up" on a loaded machine.
	for deadline := time.Now().Add(startupWait); ; {
		got := p.kubectl(t, "get", "nodes", "-o", "jsonpath={range .items[*]}{.metadata.name}{\" \"}{end}")
		if got == "kplane-node-0 kplane-node-1 kplane-node-2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nodes %q, want the three simulated nodes", got)
		}
		time.Sleep(200 * time.Millisecond)
	}
	p.kubectl(t, "create", "deployment", "web", "--image=nginx", "--replicas=3")
	p.kubectl(t, "rollout", "status", "deployment/web", "--timeout=30s")
	phases := p.kubectl(t, "get", "pods", "-l", "app=web", "-o", "jsonpath={range .items[*]}{.status.phase}{\" \"}{.spec.nodeName}{\"\\n\"}{end}")
	lines := strings.Split(phases, "\n")
	if len(lines) != 3 {
		t.Fatalf("pods:\n%s\nwant 3", phases)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "Running kplane-node-") {
			t.Fatalf("pods:\n%s\nwant every one Running on a simulated node", phases)
		}
	}

	// A new image rolls out through a second ReplicaSet; the first is
	// scaled to zero.
	p.kubectl(t, "set", "image", "deployment/web", "nginx=nginx:1.27")
	p.kubectl(t, "rollout", "status", "deployment/web", "--timeout=30s")
	rsets := p.kubectl(t, "get", "rs", "-l", "app=web", "-o", "jsonpath={range .items[*]}{.spec.template.spec.containers[0].image}={.status.readyReplicas}/{.spec.replicas}{\"\\n\"}{end}")
	if !strings.Contains(rsets, "nginx:1.27=3/3") || !strings.Contains(rsets, "nginx=/0") {
		t.Fatalf("replicasets after set image:\n%s", rsets)
	}
	if got := p.kubectl(t, "rollout", "history", "deployment/web"); !strings.Contains(got, "1 ") || !strings.Contains(got, "2 ") {
		t.Fatalf("rollout history:\n%s", got)
	}

	p.kubectl(t, "scale", "deployment/web", "--replicas=5")
	p.kubectl(t, "rollout", "status", "deployment/web", "--timeout=30s")
	if got := p.kubectl(t, "get", "deployment", "web", "-o", "jsonpath={.status.readyReplicas}/{.status.updatedReplicas}"); got != "5/5" {
		t.Fatalf("deployment ready/updated %q, want 5/5", got)
	}

	// The leader's metrics show it leads and its controllers reconciled.
	code, metrics := p.httpGet(t, "/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{
		`leader_election_master_status{name="kplane-controller-manager"} 1`,
		`controller_runtime_reconcile_total{controller="deployment",result="success"}`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// Deleting the Deployment lets the garbage collector remove its
	// ReplicaSets and their pods.
	owned := strings.Fields(p.kubectl(t, "get", "rs,pods", "-l", "app=web", "-o", "name"))
	if len(owned) != 7 { // two ReplicaSets, five pods
		t.Fatalf("owned objects %q, want 2 ReplicaSets and 5 pods", owned)
	}
	p.kubectl(t, "delete", "deployment", "web")
	p.kubectl(t, append([]string{"wait", "--for=delete", "--timeout=30s"}, owned...)...)
	if got := p.kubectl(t, "get", "rs,pods", "-l", "app=web", "-o", "name"); got != "" {
		t.Fatalf("left after deleting the deployment:\n%s", got)
	}

	p.stop(t)
}
