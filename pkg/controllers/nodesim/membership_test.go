package nodesim

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/testenv"
)

func TestAddAndRemoveNodesAtRunTime(t *testing.T) {
	t.Parallel()
	e := startSim(t, func(c *Config) { c.Nodes = 1 })
	testenv.WaitFor(t, e.env, client.Nodes, "kplane-node-0", func(n *corev1.Node) bool { return nodeCondition(n, corev1.NodeReady) != nil })
	sim := e.sim.Load()
	name, err := sim.AddNode(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if name != "kplane-node-1" || !slices.Equal(sim.NodeNames(), []string{"kplane-node-0", "kplane-node-1"}) {
		t.Fatalf("added %q, nodes %v", name, sim.NodeNames())
	}
	testenv.WaitFor(t, e.env, client.Nodes, name, func(n *corev1.Node) bool { return nodeCondition(n, corev1.NodeReady) != nil })
	// A pod pinned to the new node runs there.
	e.createPod("pinned", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: name} })
	if p := e.waitPod("pinned", runningReady); p.Spec.NodeName != name {
		t.Errorf("pinned pod on %q", p.Spec.NodeName)
	}
	// A pod created with spec.nodeName runs without scheduling.
	e.createPod("preset", func(p *corev1.Pod) { p.Spec.NodeName = "kplane-node-0" })
	e.waitPod("preset", runningReady)

	if err := sim.RemoveNode(t.Context(), name); err != nil {
		t.Fatal(err)
	}
	testenv.WaitForDeletion(t, e.env, client.Nodes, name)
	if err := sim.RemoveNode(t.Context(), name); err == nil {
		t.Error("removing a node twice succeeded")
	}
	// Its pod is left for the pod garbage collector; new pods avoid it.
	if p, err := e.pods.Get(t.Context(), "pinned", metav1.GetOptions{}); err != nil || p.Spec.NodeName != name {
		t.Errorf("pinned pod after its node went: %v, %v", p, err)
	}
	e.createPod("later", nil)
	if p := e.waitPod("later", runningReady); p.Spec.NodeName != "kplane-node-0" {
		t.Errorf("later pod on %q", p.Spec.NodeName)
	}
}

func TestDeletedNodeObjectRegistersAgain(t *testing.T) {
	t.Parallel()
	e := startSim(t, func(c *Config) { c.Nodes = 1 })
	first := testenv.WaitFor(t, e.env, client.Nodes, "kplane-node-0", func(n *corev1.Node) bool { return nodeCondition(n, corev1.NodeReady) != nil })
	// Once the simulator's own cache has seen it go, the next heartbeat
	// registers it again, as a kubelet.
	e.deleteNode("kplane-node-0")
	e.clock.Step(DefaultHeartbeatInterval)
	again := testenv.WaitFor(t, e.env, client.Nodes, "kplane-node-0", func(n *corev1.Node) bool { return nodeCondition(n, corev1.NodeReady) != nil })
	if again.UID == first.UID {
		t.Error("same node object")
	}
}

// A node found tainted not-ready when it registers, as kube-apiserver's
// TaintNodesByCondition admission taints new nodes, has the taint lifted,
// as the node lifecycle controller would once it is Ready.
func TestRegistrationLiftsNotReadyTaint(t *testing.T) {
	t.Parallel()
	e := startSim(t, func(c *Config) { c.Nodes = 1 })
	nodes := client.NewResource(e.env.Client, client.Nodes)
	testenv.WaitFor(t, e.env, client.Nodes, "kplane-node-0", func(n *corev1.Node) bool { return nodeCondition(n, corev1.NodeReady) != nil })
	e.deleteNode("kplane-node-0")
	keep := corev1.Taint{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule}
	if _, err := nodes.Create(t.Context(), &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "kplane-node-0"},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}, keep}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.clock.Step(DefaultHeartbeatInterval)
	n := testenv.WaitFor(t, e.env, client.Nodes, "kplane-node-0", func(n *corev1.Node) bool { return nodeCondition(n, corev1.NodeReady) != nil })
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0] != keep {
		t.Errorf("taints %+v, want only %+v", n.Spec.Taints, keep)
	}
}

// deleteNode deletes a Node object and waits until the simulator's cache
// has seen it go.
func (e *simEnv) deleteNode(name string) {
	e.t.Helper()
	if err := client.NewResource(e.env.Client, client.Nodes).Delete(e.t.Context(), name, metav1.DeleteOptions{}); err != nil {
		e.t.Fatal(err)
	}
	testenv.WaitForDeletion(e.t, e.env, client.Nodes, name)
	sim := e.sim.Load()
	if err := wait.PollUntilContextTimeout(e.t.Context(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, err := sim.syncer.nodeLister.Get(name)
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		e.t.Fatal(err)
	}
}
