package daemonset

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controllers/nodesim"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/testenv"
)

// envHarness runs the DaemonSet controller and a node simulator of three
// nodes on a testenv API server.
type envHarness struct {
	t   *testing.T
	env *testenv.Env
	ns  string
	dss *client.ResourceClient[*appsv1.DaemonSet]
	sim *atomic.Pointer[nodesim.Simulator]
}

func startEnv(t *testing.T) *envHarness {
	t.Helper()
	var sim atomic.Pointer[nodesim.Simulator]
	env := testenv.Start(t, testenv.WithController(Name, func(ctx context.Context, env *testenv.Env) error {
		logger := slog.New(slog.DiscardHandler)
		f, err := informers.New(informers.Config{Client: env.Client, Logger: logger})
		if err != nil {
			return err
		}
		defer f.Shutdown()
		c, err := New(Config{Client: env.Client, Informers: f, Logger: logger})
		if err != nil {
			return err
		}
		s, err := nodesim.New(nodesim.Config{Client: env.Client, Informers: f, Logger: logger, StartupDelay: -1})
		if err != nil {
			return err
		}
		sim.Store(s)
		f.Start(ctx)
		var wg sync.WaitGroup
		errs := make(chan error, 1)
		wg.Go(func() { errs <- s.Run(ctx, 2) })
		err = c.Run(ctx, 2)
		wg.Wait()
		if serr := <-errs; err == nil {
			err = serr
		}
		return err
	}))
	ns := env.Namespace(t)
	return &envHarness{t: t, env: env, ns: ns, dss: client.NewResource(env.Client, client.DaemonSets).Namespace(ns), sim: &sim}
}

// rolledOut is kubectl's DaemonSetStatusViewer verdict: the generation
// observed, every desired pod updated and available.
func rolledOut(ds *appsv1.DaemonSet) bool {
	return ds.Generation <= ds.Status.ObservedGeneration &&
		ds.Status.UpdatedNumberScheduled >= ds.Status.DesiredNumberScheduled &&
		ds.Status.NumberAvailable >= ds.Status.DesiredNumberScheduled
}

func (h *envHarness) waitDS(cond func(*appsv1.DaemonSet) bool) *appsv1.DaemonSet {
	h.t.Helper()
	return testenv.WaitFor(h.t, h.env, client.DaemonSets, h.ns+"/agent", cond)
}

// livePods returns the daemon pods not being deleted, by node.
func (h *envHarness) livePods() map[string][]*corev1.Pod {
	h.t.Helper()
	list, err := client.NewResource(h.env.Client, client.Pods).Namespace(h.ns).List(h.t.Context(), metav1.ListOptions{LabelSelector: "app=agent"})
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string][]*corev1.Pod{}
	for i := range list.Items {
		p := list.Items[i]
		if p.DeletionTimestamp == nil {
			out[p.Spec.NodeName] = append(out[p.Spec.NodeName], p)
		}
	}
	return out
}

func TestDaemonSetFollowsNodesAndRollsOut(t *testing.T) {
	t.Parallel()
	h := startEnv(t)
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "agent:1"}}},
			},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxSurge: ptrTo(intstr.FromInt32(1)), MaxUnavailable: ptrTo(intstr.FromInt32(0))}},
		},
	}
	if _, err := h.dss.Create(t.Context(), ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitDS(func(ds *appsv1.DaemonSet) bool { return ds.Status.DesiredNumberScheduled == 3 && rolledOut(ds) })
	pods := h.livePods()
	for _, node := range h.sim.Load().NodeNames() {
		if len(pods[node]) != 1 {
			t.Errorf("node %s runs %d daemon pods, want 1", node, len(pods[node]))
		}
	}

	// A node joins: it gets a pod. A node leaves: it is no longer counted.
	sim := h.sim.Load()
	added, err := sim.AddNode(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	h.waitDS(func(ds *appsv1.DaemonSet) bool {
		return ds.Status.DesiredNumberScheduled == 4 && ds.Status.NumberAvailable == 4
	})
	if p := h.livePods()[added]; len(p) != 1 {
		t.Errorf("added node %s runs %d daemon pods", added, len(p))
	}
	if err := sim.RemoveNode(t.Context(), "kplane-node-0"); err != nil {
		t.Fatal(err)
	}
	h.waitDS(func(ds *appsv1.DaemonSet) bool {
		return ds.Status.DesiredNumberScheduled == 3 && ds.Status.CurrentNumberScheduled == 3 && ds.Status.NumberAvailable == 3
	})

	// A new template rolls out, surging one node at a time.
	cur, err := h.dss.Get(t.Context(), "agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Template.Spec.Containers[0].Image = "agent:2"
	if _, err := h.dss.Update(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitDS(func(ds *appsv1.DaemonSet) bool {
		return ds.Generation == 2 && rolledOut(ds) && ds.Status.NumberUnavailable == 0
	})
	// The status may count the surged pods available before the
	// controller's next sync deletes the old ones: wait for those.
	for node, ps := range h.livePods() {
		for _, p := range ps {
			if node != "kplane-node-0" && p.Spec.Containers[0].Image != "agent:2" {
				testenv.WaitForDeletion(t, h.env, client.Pods, testenv.Key(p))
			}
		}
	}
	for node, ps := range h.livePods() {
		if node == "kplane-node-0" {
			continue // the removed node's pod waits for the pod garbage collector
		}
		if len(ps) != 1 || ps[0].Spec.Containers[0].Image != "agent:2" {
			t.Errorf("node %s: %d pods, first %s", node, len(ps), ps[0].Spec.Containers[0].Image)
		}
	}

	// `kubectl rollout undo`: the first revision's data patched onto the
	// DaemonSet brings the first template back, and renumbers its revision.
	revs, err := client.NewResource(h.env.Client, client.ControllerRevisions).Namespace(h.ns).List(t.Context(), metav1.ListOptions{LabelSelector: labels.Set{"app": "agent"}.String()})
	if err != nil {
		t.Fatal(err)
	}
	var first *appsv1.ControllerRevision
	for i := range revs.Items {
		if revs.Items[i].Revision == 1 {
			first = revs.Items[i]
		}
	}
	if len(revs.Items) != 2 || first == nil {
		t.Fatalf("revisions: %d, revision 1 found %v", len(revs.Items), first != nil)
	}
	if _, err := h.dss.Patch(t.Context(), "agent", types.StrategicMergePatchType, first.Data.Raw, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitDS(func(ds *appsv1.DaemonSet) bool {
		return ds.Generation == 3 && ds.Spec.Template.Spec.Containers[0].Image == "agent:1" && rolledOut(ds)
	})
	rev, err := client.NewResource(h.env.Client, client.ControllerRevisions).Namespace(h.ns).Get(t.Context(), first.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rev.Revision != 3 {
		t.Errorf("undone-to revision is now %d, want 3", rev.Revision)
	}
}
