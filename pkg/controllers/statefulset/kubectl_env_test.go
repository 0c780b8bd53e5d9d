package statefulset

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kplane/kplane/pkg/testenv"
)

// kubectl runs kubectl against h's server in h's namespace and returns its
// combined output; the test is skipped when kubectl is not installed.
func (h *envHarness) kubectl(args ...string) (string, error) {
	h.t.Helper()
	path, err := exec.LookPath("kubectl")
	if err != nil {
		h.t.Skip("kubectl not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	all := append([]string{"--kubeconfig", h.env.KubeconfigPath, "-n", h.ns}, args...)
	out, err := exec.CommandContext(ctx, path, all...).CombinedOutput()
	return string(out), err
}

// TestEnvKubectlRollout drives a StatefulSet with kubectl as a user would:
// rollout status ends, rollout history lists the revisions, and rollout
// undo brings the previous template back.
func TestEnvKubectlRollout(t *testing.T) {
	t.Parallel()
	// kubectl sends its token over TLS only.
	h := startEnv(t, testenv.WithTLS(true))
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl not installed")
	}
	h.runControllers(3, 2)
	h.create(newSet(2))
	if out, err := h.kubectl("rollout", "status", "statefulset/web", "--timeout=60s"); err != nil || !strings.Contains(out, "roll out complete") {
		t.Fatalf("rollout status: %v\n%s", err, out)
	}
	h.patch("web", `{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"nginx:2"}]}}}}`)
	if out, err := h.kubectl("rollout", "status", "statefulset/web", "--timeout=60s"); err != nil || !strings.Contains(out, "roll out complete") {
		t.Fatalf("rollout status after update: %v\n%s", err, out)
	}
	out, err := h.kubectl("rollout", "history", "statefulset/web")
	if err != nil || !strings.Contains(out, "\n1 ") || !strings.Contains(out, "\n2 ") {
		t.Fatalf("rollout history: %v\n%s", err, out)
	}
	if out, err := h.kubectl("rollout", "history", "statefulset/web", "--revision=1"); err != nil || !strings.Contains(out, "nginx:1") {
		t.Fatalf("rollout history --revision=1: %v\n%s", err, out)
	}
	if out, err := h.kubectl("rollout", "undo", "statefulset/web"); err != nil || !strings.Contains(out, "rolled back") {
		t.Fatalf("rollout undo: %v\n%s", err, out)
	}
	s := h.waitSet("web", func(s *appsv1.StatefulSet) bool {
		return allReady(s) && s.Spec.Template.Spec.Containers[0].Image == "nginx:1" && s.Status.CurrentRevision == s.Status.UpdateRevision
	})
	for _, p := range h.listPods() {
		if imageOf(p) != "nginx:1" || p.Labels[appsv1.StatefulSetRevisionLabel] != s.Status.UpdateRevision {
			t.Errorf("%s runs %s at %s after the undo", p.Name, imageOf(p), p.Labels[appsv1.StatefulSetRevisionLabel])
		}
	}
	out, err = h.kubectl("rollout", "history", "statefulset/web")
	if err != nil || !strings.Contains(out, "\n2 ") || !strings.Contains(out, "\n3 ") || strings.Contains(out, "\n1 ") {
		t.Errorf("history after undo (revision 1 renumbered 3): %v\n%s", err, out)
	}
}
