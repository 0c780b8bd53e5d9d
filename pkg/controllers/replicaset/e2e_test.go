package replicaset

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	h.waitRS("web", "2 ready again, none terminating", func(rs *appsv1.ReplicaSet) bool {
		return rs.Status.Replicas == 2 && rs.Status.ReadyReplicas == 2 && rs.Status.AvailableReplicas == 2 &&
			rs.Status.TerminatingReplicas != nil && *rs.Status.TerminatingReplicas == 0
	})
}

// TestE2ERandomized applies random scalings, pod deletions, relabellings
// and orphan creations, then checks that the ReplicaSet converges: exactly
// spec.replicas running, ready pods match its selector, all controlled by
// it, and its status says so.
func TestE2ERandomized(t *testing.T) {
	t.Parallel()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	h := startHarness(t, withNodes)
	rs := h.createRS("web", 3)
	replicas := int32(3)
	ctx := t.Context()
	for i := range 15 {
		list, err := h.pods.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mine := controlledBy(list.Items, rs)
		switch op := rng.IntN(4); {
		case op == 0:
			replicas = rng.Int32N(7)
			t.Logf("op %d: scale to %d", i, replicas)
			h.scale("web", replicas)
		case op == 1 && len(mine) > 0:
			p := mine[rng.IntN(len(mine))]
			t.Logf("op %d: delete %s", i, p.Name)
			if err := h.pods.Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
		case op == 2 && len(mine) > 0:
			p := mine[rng.IntN(len(mine))]
			t.Logf("op %d: relabel %s", i, p.Name)
			patch := []byte(`{"metadata":{"labels":{"app":"released"}}}`)
			if _, err := h.pods.Patch(ctx, p.Name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
		default:
			t.Logf("op %d: create an orphan", i)
			orphan := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{GenerateName: "orphan-", Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}},
			}
			if _, err := h.pods.Create(ctx, orphan, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	h.waitPods(fmt.Sprintf("%d running ready pods matching the selector, all controlled", replicas), func(p []*corev1.Pod) bool {
		matching := 0
		for _, x := range p {
			if x.Labels["app"] == "web" {
				if x.DeletionTimestamp != nil || metav1.GetControllerOf(x) == nil || metav1.GetControllerOf(x).UID != rs.UID {
					return false
				}
				matching++
			}
		}
		return matching == int(replicas) && runningReadyOf(p, rs) == int(replicas)
	})
	h.waitRS("web", "status converged", func(rs *appsv1.ReplicaSet) bool {
		return rs.Status.Replicas == replicas && rs.Status.ReadyReplicas == replicas && rs.Status.AvailableReplicas == replicas
	})
}
