package e2e

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// managerProcess is a running `kplane controller-manager`.
type managerProcess struct {
	*process
	identity string
}

// startControllerManager runs the binary against kubeconfig and waits
// until it prints its identity.
func startControllerManager(t *testing.T, kubeconfig string, args ...string) *managerProcess {
	t.Helper()
	p := &managerProcess{}
	p.process = startProcess(t, "kplane controller-manager", append([]string{"controller-manager", "--kubeconfig", kubeconfig, "--health-address", "127.0.0.1:0",
		"--leader-elect-lease-duration", "3s", "--leader-elect-renew-deadline", "2s", "--leader-elect-retry-period", "250ms"}, args...), func(line string) bool {
		_, rest, ok := strings.Cut(line, " as ")
		if !ok || !strings.HasPrefix(line, "controller manager running ") {
			return false
		}
		p.identity, _, _ = strings.Cut(rest, ";")
		return true
	})
	return p
}

func kubectlWith(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	cmd := exec.Command("kubectl", args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

const e2eReplicaSet = `apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: rs}}
  template:
    metadata: {labels: {app: rs}}
    spec: {containers: [{name: c, image: nginx}]}
`

// Two controller managers against one API server: one leads and acts;
// when it is stopped, the other takes the lease over and acts.
func TestControllerManagerFailover(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl is not installed")
	}
	s := startAPIServer(t, kplaneBin, "--storage", "memory")
	// The serviceaccount controller makes the default ServiceAccount that
	// ServiceAccount admission wants of every pod, as on Kubernetes.
	a := startControllerManager(t, s.kubeconfig, "--controllers", "replicaset,serviceaccount")
	b := startControllerManager(t, s.kubeconfig, "--controllers", "replicaset,serviceaccount")
	if a.identity == b.identity {
		t.Fatalf("both managers are %q", a.identity)
	}

	apply := exec.Command("kubectl", "apply", "-f", "-")
	apply.Env = append(os.Environ(), "KUBECONFIG="+s.kubeconfig)
	apply.Stdin = strings.NewReader(e2eReplicaSet)
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	kubectlWith(t, s.kubeconfig, "wait", "--for=jsonpath={.status.replicas}=2", "rs/rs", "--timeout=30s")
	holder := kubectlWith(t, s.kubeconfig, "get", "lease", "-n", "kube-system", "kplane-controller-manager", "-o", "jsonpath={.spec.holderIdentity}")
	leader, standby := a, b
	switch holder {
	case a.identity:
	case b.identity:
		leader, standby = b, a
	default:
		t.Fatalf("lease holder %q is neither %q nor %q", holder, a.identity, b.identity)
	}

	if err := leader.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-leader.exited:
		if err != nil {
			t.Fatalf("leader exited with %v after SIGTERM", err)
		}
		leader.exited <- nil
	case <-time.After(startupWait):
		t.Fatal("leader did not stop on SIGTERM")
	}
	kubectlWith(t, s.kubeconfig, "wait", "--for=jsonpath={.spec.holderIdentity}="+standby.identity, "-n", "kube-system", "lease/kplane-controller-manager", "--timeout=30s")
	kubectlWith(t, s.kubeconfig, "scale", "rs/rs", "--replicas=3")
	kubectlWith(t, s.kubeconfig, "wait", "--for=jsonpath={.status.replicas}=3", "rs/rs", "--timeout=30s")
}

// Bad flags are reported before anything runs.
func TestControllerManagerBadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "unknown controller", args: []string{"--controllers", "*,no-such-controller"}, want: `unknown controller "no-such-controller"`},
		{name: "unknown feature", args: []string{"--feature-gates", "NoSuchFeature=true"}, want: "NoSuchFeature"},
		{name: "missing kubeconfig", args: []string{"--kubeconfig", "/nonexistent/kubeconfig"}, want: "/nonexistent/kubeconfig"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"controller-manager", "--health-address", ""}, tt.args...)
			if !strings.Contains(strings.Join(tt.args, " "), "--kubeconfig") {
				args = append(args, "--kubeconfig", writeDummyKubeconfig(t))
			}
			out, err := exec.Command(kplaneBin, args...).CombinedOutput()
			if err == nil {
				t.Fatalf("kplane %s succeeded:\n%s", strings.Join(args, " "), out)
			}
			if !strings.Contains(string(out), tt.want) {
				t.Fatalf("output lacks %q:\n%s", tt.want, out)
			}
		})
	}
}

// writeDummyKubeconfig writes a kubeconfig for a server that is never
// reached.
func writeDummyKubeconfig(t *testing.T) string {
	t.Helper()
	path := t.TempDir() + "/kubeconfig"
	if err := os.WriteFile(path, []byte(kubeconfigFor("http://127.0.0.1:1")), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func kubeconfigFor(server string) string {
	return `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "` + server + `"}}]
users: [{name: u, user: {}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`
}
