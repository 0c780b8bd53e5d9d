package replicaset

import (
	"context"
	"log/slog"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/controllers/nodesim"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/testenv"
)

// withNodes runs a node simulator next to the controller.
func withNodes(_ context.Context, env *testenv.Env, f *informers.Factory) (func(context.Context) error, error) {
	sim, err := nodesim.New(nodesim.Config{Client: env.Client, Informers: f, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) error { return sim.Run(ctx, 2) }, nil
}

func runningReadyOf(pods []*corev1.Pod, rs *appsv1.ReplicaSet) int {
	n := 0
	for _, p := range controlledBy(pods, rs) {
		if p.Status.Phase == corev1.PodRunning && isPodReady(p) && p.Spec.NodeName != "" {
			n++
		}
	}
	return n
}

func TestE2EWithNodeSimulator(t *testing.T) {
	t.Parallel()
	h := startHarness(t, withNodes)
	rs := h.createRS("web", 5)
	h.waitPods("5 running ready pods", func(p []*corev1.Pod) bool { return runningReadyOf(p, rs) == 5 })
	h.waitRS("web", "5 ready", func(rs *appsv1.ReplicaSet) bool {
		return rs.Status.Replicas == 5 && rs.Status.ReadyReplicas == 5 && rs.Status.AvailableReplicas == 5
	})

	h.scale("web", 2)
	h.waitRS("web", "2 ready", func(rs *appsv1.ReplicaSet) bool {
		return rs.Status.Replicas == 2 && rs.Status.ReadyReplicas == 2
	})
	// The surplus pods are deleted gracefully and removed by their nodes.
	pods := h.waitPods("only 2 pods left", func(p []*corev1.Pod) bool { return len(p) == 2 && runningReadyOf(p, rs) == 2 })

	victim := pods[0]
	if err := h.pods.Delete(t.Context(), victim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitPods("victim replaced", func(p []*corev1.Pod) bool {
		for _, x := range p {
			if x.UID == victim.UID {
				return false
			}
		}
		return len(p) == 2 && runningReadyOf(p, rs) == 2
	})
	h.waitRS("web", "2 ready again", func(rs *appsv1.ReplicaSet) bool {
		return rs.Status.Replicas == 2 && rs.Status.ReadyReplicas == 2 && rs.Status.AvailableReplicas == 2
	})
}
