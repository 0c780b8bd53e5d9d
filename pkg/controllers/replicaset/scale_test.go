package replicaset

import (
	"context"
	"log/slog"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kplane/kplane/pkg/controllers/nodesim"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/testenv"
)

// TestE2EScale scales a ReplicaSet to 100 pods over 5 simulated nodes and
// back to none; it logs how long each leg took. (Kept small: the machines
// running the tests are shared; timing belongs in benchmarks.)
func TestE2EScale(t *testing.T) {
	if testing.Short() {
		t.Skip("scale test")
	}
	t.Parallel()
	withFiveNodes := func(_ context.Context, env *testenv.Env, f *informers.Factory) (func(context.Context) error, error) {
		sim, err := nodesim.New(nodesim.Config{Nodes: 5, Client: env.Client, Informers: f, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) error { return sim.Run(ctx, 4) }, nil
	}
	const replicas = 100
	h := startHarness(t, withFiveNodes)
	start := time.Now()
	rs := h.createRS("big", replicas)
	h.waitRS("big", "all ready", func(rs *appsv1.ReplicaSet) bool { return rs.Status.ReadyReplicas == replicas })
	t.Logf("%d pods running and ready in %v", replicas, time.Since(start))
	pods := h.waitPods("all pods", func(p []*corev1.Pod) bool { return len(controlledBy(p, rs)) == replicas })
	perNode := map[string]int{}
	for _, p := range pods {
		perNode[p.Spec.NodeName]++
	}
	for node, n := range perNode {
		if n != replicas/5 {
			t.Errorf("node %s runs %d pods, want %d", node, n, replicas/5)
		}
	}

	start = time.Now()
	h.scale("big", 0)
	h.waitRS("big", "none left", func(rs *appsv1.ReplicaSet) bool { return rs.Status.Replicas == 0 })
	h.waitPods("no pods", func(p []*corev1.Pod) bool { return len(p) == 0 })
	t.Logf("scaled to 0 in %v", time.Since(start))
}
