package daemonset

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestNodeShouldRunDaemonPod(t *testing.T) {
	taint := func(key string, effect corev1.TaintEffect) func(*corev1.Node) {
		return func(n *corev1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Value: "v", Effect: effect})
		}
	}
	affinity := func(terms ...corev1.NodeSelectorTerm) func(*appsv1.DaemonSet) {
		return func(ds *appsv1.DaemonSet) {
			ds.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms},
			}}
		}
	}
	expr := func(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}
	}
	labelled := func(n *corev1.Node) { n.Labels["disk"] = "ssd"; n.Labels["cores"] = "8" }
	for _, tc := range []struct {
		name                     string
		ds                       func(*appsv1.DaemonSet)
		node                     func(*corev1.Node)
		wantRun, wantKeepRunning bool
	}{
		{"plain node runs the pod", nil, nil, true, true},
		{"nodeSelector matches", func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeSelector = map[string]string{"disk": "ssd"} }, labelled, true, true},
		{"nodeSelector does not match", func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeSelector = map[string]string{"disk": "hdd"} }, labelled, false, false},
		{"template nodeName elsewhere", func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeName = "other" }, nil, false, false},
		{"template nodeName here", func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeName = "n" }, nil, true, true},
		{"affinity In matches", affinity(expr("disk", corev1.NodeSelectorOpIn, "ssd", "nvme")), labelled, true, true},
		{"affinity NotIn excludes", affinity(expr("disk", corev1.NodeSelectorOpNotIn, "ssd")), labelled, false, false},
		{"affinity Gt", affinity(expr("cores", corev1.NodeSelectorOpGt, "4")), labelled, true, true},
		{"affinity Lt fails", affinity(expr("cores", corev1.NodeSelectorOpLt, "4")), labelled, false, false},
		{"affinity DoesNotExist", affinity(expr("gpu", corev1.NodeSelectorOpDoesNotExist)), labelled, true, true},
		{"affinity terms are ORed", affinity(expr("gpu", corev1.NodeSelectorOpExists), expr("disk", corev1.NodeSelectorOpExists)), labelled, true, true},
		{"affinity matchFields metadata.name", affinity(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n"}}}}), nil, true, true},
		{"untolerated NoSchedule taint keeps running pods", nil, taint("dedicated", corev1.TaintEffectNoSchedule), false, true},
		{"untolerated NoExecute taint evicts", nil, taint("dedicated", corev1.TaintEffectNoExecute), false, false},
		{"PreferNoSchedule taint is ignored", nil, taint("dedicated", corev1.TaintEffectPreferNoSchedule), true, true},
		{"tolerated taint", func(ds *appsv1.DaemonSet) {
			ds.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
		}, taint("dedicated", corev1.TaintEffectNoExecute), true, true},
		{"cordoned node by default toleration", nil, func(n *corev1.Node) {
			n.Spec.Unschedulable = true
			taint(TaintNodeUnschedulable, corev1.TaintEffectNoSchedule)(n)
		}, true, true},
		{"not-ready NoExecute by default toleration", nil, taint(TaintNodeNotReady, corev1.TaintEffectNoExecute), true, true},
		{"memory pressure by default toleration", nil, taint(TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule), true, true},
		{"network-unavailable blocks pod networking", nil, taint(TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule), false, true},
		{"network-unavailable tolerated for hostNetwork", func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.HostNetwork = true },
			taint(TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule), true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run, keep := NodeShouldRunDaemonPod(newNode("n", tc.node), newDS(tc.ds))
			if run != tc.wantRun || keep != tc.wantKeepRunning {
				t.Errorf("shouldRun, shouldContinueRunning = %v, %v; want %v, %v", run, keep, tc.wantRun, tc.wantKeepRunning)
			}
		})
	}
}

func TestSyncCreatesOnePodPerEligibleNodeWithAffinity(t *testing.T) {
	ds := newDS(func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeSelector = map[string]string{"role": "worker"} })
	worker := func(n *corev1.Node) { n.Labels["role"] = "worker" }
	f := newFixture(t, ds, newNode("a", worker), newNode("b", worker), newNode("c", nil))
	f.sync()
	if diff := cmp.Diff([]string{"create a", "create b", "create revision 1"}, f.take()); diff != "" {
		t.Fatalf("actions (-want +got):\n%s", diff)
	}
	rev := f.revIdx.List()[0]
	hash := rev.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]
	if rev.Name != "agent-"+hash || metav1.GetControllerOf(rev).UID != ds.UID {
		t.Errorf("revision %s, owner %v", rev.Name, rev.OwnerReferences)
	}
	for _, p := range f.pods() {
		if p.Spec.NodeName != "" {
			t.Errorf("pod %s created bound to %s; the scheduler binds daemon pods", p.Name, p.Spec.NodeName)
		}
		terms := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		if len(terms) != 1 || len(terms[0].MatchFields) != 1 || terms[0].MatchFields[0].Key != "metadata.name" {
			t.Errorf("pod %s affinity = %+v, want matchFields metadata.name In [node]", p.Name, terms)
		}
		if p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != hash || p.Labels[TemplateGenerationLabel] != "1" {
			t.Errorf("pod %s labels = %v", p.Name, p.Labels)
		}
		var keys []string
		for _, tol := range p.Spec.Tolerations {
			keys = append(keys, tol.Key+":"+string(tol.Effect))
		}
		want := []string{TaintNodeNotReady + ":NoExecute", TaintNodeUnreachable + ":NoExecute", TaintNodeDiskPressure + ":NoSchedule",
			TaintNodeMemoryPressure + ":NoSchedule", TaintNodePIDPressure + ":NoSchedule", TaintNodeUnschedulable + ":NoSchedule"}
		if diff := cmp.Diff(want, keys); diff != "" {
			t.Errorf("tolerations (-want +got):\n%s", diff)
		}
		if ref := metav1.GetControllerOf(p); ref == nil || ref.Kind != "DaemonSet" || ref.UID != ds.UID {
			t.Errorf("pod %s controller = %v", p.Name, ref)
		}
	}
	st := f.ds().Status
	if st.DesiredNumberScheduled != 2 || st.CurrentNumberScheduled != 2 || st.NumberReady != 0 || st.NumberUnavailable != 2 || st.ObservedGeneration != 1 {
		t.Errorf("status = %+v", st)
	}
	if got := slices.Index(f.events, ReasonSuccessfulCreate); got < 0 {
		t.Errorf("events = %v, want SuccessfulCreate", f.events)
	}
	// Running and ready: the status says so; nothing more is created.
	f.runPods()
	f.sync()
	if got := f.take(); len(got) != 0 {
		t.Errorf("second sync acted: %v", got)
	}
	if st := f.ds().Status; st.NumberReady != 2 || st.NumberAvailable != 2 || st.NumberUnavailable != 0 || st.UpdatedNumberScheduled != 2 {
		t.Errorf("status = %+v", st)
	}
}

func TestSyncWaitsForExpectedCreations(t *testing.T) {
	f := newFixture(t, newDS(nil), newNode("a", nil), newNode("b", nil))
	f.hideCreates = true
	f.sync()
	if got := f.take(); len(got) != 3 {
		t.Fatalf("actions = %v", got)
	}
	f.changeTemplate("agent:2")
	f.sync()
	if got := f.take(); len(got) != 1 || got[0] != "create revision 2" {
		t.Errorf("sync before the creations were observed acted: %v", got)
	}
	if g := f.ds().Status.ObservedGeneration; g != 1 {
		t.Errorf("observedGeneration = %d with unmet expectations, want still 1", g)
	}
}

func TestSyncNodeAddedGetsPodNodeGoneUnboundPodDeleted(t *testing.T) {
	f := newFixture(t, newDS(nil), newNode("a", nil))
	f.sync()
	f.runPods()
	if err := f.nodes.Add(newNode("b", nil)); err != nil {
		t.Fatal(err)
	}
	f.take()
	f.sync()
	if diff := cmp.Diff([]string{"create b"}, f.take()); diff != "" {
		t.Fatalf("node added (-want +got):\n%s", diff)
	}
	// b goes before its pod was bound: the pod can never be; it is deleted.
	// a goes with its pod bound: the pod garbage collector's, not counted.
	f.nodes.DeleteKey("b")
	f.nodes.DeleteKey("a")
	f.sync()
	got := f.take()
	if len(got) != 1 || got[0] != "delete agent-2" {
		t.Errorf("nodes gone: actions = %v, want the unbound pod deleted", got)
	}
	if st := f.ds().Status; st.DesiredNumberScheduled != 0 || st.CurrentNumberScheduled != 0 || st.NumberMisscheduled != 0 {
		t.Errorf("status = %+v, want pods of vanished nodes not counted", st)
	}
}

func TestSyncDeletesPodsOnNodesThatStopMatching(t *testing.T) {
	ds := newDS(func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeSelector = map[string]string{"role": "worker"} })
	f := newFixture(t, ds, newNode("a", func(n *corev1.Node) { n.Labels["role"] = "worker" }), newNode("b", func(n *corev1.Node) { n.Labels["role"] = "worker" }))
	f.sync()
	f.runPods()
	f.take()
	if err := f.nodes.Update(newNode("b", nil)); err != nil { // label removed
		t.Fatal(err)
	}
	f.sync()
	if diff := cmp.Diff([]string{"delete agent-2"}, f.take()); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if st := f.ds().Status; st.DesiredNumberScheduled != 1 || st.NumberMisscheduled != 1 {
		t.Errorf("status = %+v, want 1 desired and the terminating pod misscheduled", st)
	}
	f.finishDeletions()
	f.sync()
	if st := f.ds().Status; st.NumberMisscheduled != 0 {
		t.Errorf("status = %+v", st)
	}
	// A NoSchedule taint keeps the running pod; NoExecute evicts it.
	f.take()
	if err := f.nodes.Update(newNode("a", func(n *corev1.Node) {
		n.Labels["role"] = "worker"
		n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}
	})); err != nil {
		t.Fatal(err)
	}
	f.sync()
	if got := f.take(); len(got) != 0 {
		t.Errorf("NoSchedule taint: actions = %v, want the pod kept", got)
	}
	if err := f.nodes.Update(newNode("a", func(n *corev1.Node) {
		n.Labels["role"] = "worker"
		n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoExecute}}
	})); err != nil {
		t.Fatal(err)
	}
	f.sync()
	if diff := cmp.Diff([]string{"delete agent-1"}, f.take()); diff != "" {
		t.Errorf("NoExecute taint (-want +got):\n%s", diff)
	}
}

func TestSyncReplacesFailedPodsWithBackoff(t *testing.T) {
	f := newFixture(t, newDS(nil), newNode("a", nil))
	f.sync()
	f.runPods()
	f.take()
	fail := func(name string) {
		f.setPhase(name, corev1.PodFailed)
	}
	fail("agent-1")
	f.sync()
	if diff := cmp.Diff([]string{"delete agent-1"}, f.take()); diff != "" {
		t.Fatalf("first failure (-want +got):\n%s", diff)
	}
	if !slices.Contains(f.events, ReasonFailedDaemonPod) {
		t.Errorf("events = %v, want FailedDaemonPod", f.events)
	}
	f.finishDeletions()
	f.sync()
	if diff := cmp.Diff([]string{"create a"}, f.take()); diff != "" {
		t.Fatalf("replacement (-want +got):\n%s", diff)
	}
	// The replacement fails at once: within the 1s back-off it stays, and
	// the DaemonSet is looked at again when the back-off ends.
	fail("agent-2")
	f.requeued = nil
	f.sync()
	if got := f.take(); len(got) != 0 {
		t.Fatalf("in back-off: actions = %v", got)
	}
	if len(f.requeued) != 1 || f.requeued[0] != time.Second {
		t.Errorf("requeued = %v, want after 1s", f.requeued)
	}
	f.clock.Step(time.Second)
	f.sync()
	if diff := cmp.Diff([]string{"delete agent-2"}, f.take()); diff != "" {
		t.Fatalf("after back-off (-want +got):\n%s", diff)
	}
	// The next back-off is twice as long.
	f.finishDeletions()
	f.sync()
	f.take()
	fail("agent-3")
	f.clock.Step(1500 * time.Millisecond)
	f.sync()
	if got := f.take(); len(got) != 0 {
		t.Errorf("second back-off is 2s: actions after 1.5s = %v", got)
	}
	f.clock.Step(500 * time.Millisecond)
	f.sync()
	if diff := cmp.Diff([]string{"delete agent-3"}, f.take()); diff != "" {
		t.Errorf("after 2s (-want +got):\n%s", diff)
	}
}

func TestSyncKeepsOldestOfSurplusPods(t *testing.T) {
	f := newFixture(t, newDS(nil), newNode("a", nil))
	f.sync()
	f.runPods()
	// A second pod for the same node, made later (say by a controller
	// restarted before it saw the first).
	dup := f.pods()[0].DeepCopy()
	dup.Name, dup.UID = "agent-dup", "uid-dup"
	dup.CreationTimestamp = metav1.NewTime(dup.CreationTimestamp.Add(time.Minute))
	if err := f.podIdx.Add(dup); err != nil {
		t.Fatal(err)
	}
	f.take()
	f.sync()
	if diff := cmp.Diff([]string{"delete agent-dup"}, f.take()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestSyncAdoptsMatchingOrphans(t *testing.T) {
	f := newFixture(t, newDS(nil), newNode("a", nil))
	orphan := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "orphan", UID: "uid-orphan", Labels: map[string]string{"app": "agent"}},
		Spec:       corev1.PodSpec{NodeName: "a", Containers: []corev1.Container{{Name: "c", Image: "agent:1"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if err := f.podIdx.Add(orphan); err != nil {
		t.Fatal(err)
	}
	f.sync()
	got := f.take()
	if !slices.Contains(got, "adopt orphan") || slices.Contains(got, "create a") {
		t.Errorf("actions = %v, want the orphan adopted and no pod created", got)
	}
}

func TestSyncSelectingAll(t *testing.T) {
	f := newFixture(t, newDS(func(ds *appsv1.DaemonSet) { ds.Spec.Selector = &metav1.LabelSelector{} }), newNode("a", nil))
	f.sync()
	if got := f.take(); len(got) != 0 || !slices.Contains(f.events, ReasonSelectingAll) {
		t.Errorf("actions = %v, events = %v; want nothing done and SelectingAll", got, f.events)
	}
}

func TestSyncMinReadySeconds(t *testing.T) {
	f := newFixture(t, newDS(func(ds *appsv1.DaemonSet) { ds.Spec.MinReadySeconds = 30 }), newNode("a", nil))
	f.sync()
	f.runPods()
	f.requeued = nil
	f.sync()
	if st := f.ds().Status; st.NumberReady != 1 || st.NumberAvailable != 0 || st.NumberUnavailable != 1 {
		t.Errorf("status = %+v, want ready but not yet available", st)
	}
	if !slices.Contains(f.requeued, 30*time.Second) {
		t.Errorf("requeued = %v, want after minReadySeconds", f.requeued)
	}
	f.clock.Step(30 * time.Second)
	f.sync()
	if st := f.ds().Status; st.NumberAvailable != 1 || st.NumberUnavailable != 0 {
		t.Errorf("status = %+v, want available after minReadySeconds", st)
	}
}

// rollout runs syncs, letting the scheduler and kubelets act between them,
// until all pods run image or the steps run out; it fails the test if
// more than maxDown nodes lack an available pod, or more than maxPods pods
// live on a node, at any step.
func rollout(t *testing.T, f *fixture, image string, nodes, maxDown, maxPods int) (steps int) {
	t.Helper()
	for steps = 1; steps <= 20; steps++ {
		f.sync()
		f.take()
		live, updated := f.podsOnNodes(image)
		down := nodes
		for _, p := range f.pods() {
			if p.DeletionTimestamp == nil && isPodAvailable(p, 0, f.clock.Now()) {
				down--
			}
		}
		for node, n := range live {
			if n > maxPods {
				t.Fatalf("step %d: %d pods on %s", steps, n, node)
			}
		}
		if down > maxDown {
			t.Fatalf("step %d: %d nodes without an available pod, want at most %d", steps, down, maxDown)
		}
		if updated == nodes && len(live) == nodes && down == 0 {
			return steps
		}
		f.finishDeletions()
		f.runPods()
	}
	t.Fatalf("rollout did not finish")
	return steps
}

func TestRollingUpdateMaxUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name           string
		maxUnavailable intstr.IntOrString
		wantDown       int
	}{
		{"maxUnavailable 1 replaces one node at a time", intstr.FromInt32(1), 1},
		{"maxUnavailable 50% of 4 replaces two", intstr.FromString("50%"), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := newDS(func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = &tc.maxUnavailable })
			f := newFixture(t, ds, newNode("a", nil), newNode("b", nil), newNode("c", nil), newNode("d", nil))
			f.sync()
			f.runPods()
			f.sync()
			f.take()
			f.changeTemplate("agent:2")
			f.sync()
			got := f.take()
			deletes := 0
			for _, a := range got {
				if len(a) > 7 && a[:7] == "delete " {
					deletes++
				}
			}
			if deletes != tc.wantDown || !slices.Contains(got, "create revision 2") {
				t.Fatalf("first step: actions = %v, want %d deletions and revision 2", got, tc.wantDown)
			}
			rollout(t, f, "agent:2", 4, tc.wantDown, 1)
			if st := f.ds().Status; st.UpdatedNumberScheduled != 4 || st.NumberAvailable != 4 || st.ObservedGeneration != 2 {
				t.Errorf("status = %+v", st)
			}
		})
	}
}

func TestRollingUpdateMaxSurge(t *testing.T) {
	ds := newDS(func(ds *appsv1.DaemonSet) {
		ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptrTo(intstr.FromInt32(0))
		ds.Spec.UpdateStrategy.RollingUpdate.MaxSurge = ptrTo(intstr.FromInt32(1))
	})
	f := newFixture(t, ds, newNode("a", nil), newNode("b", nil), newNode("c", nil))
	f.sync()
	f.runPods()
	f.sync()
	f.take()
	f.changeTemplate("agent:2")
	f.sync()
	if diff := cmp.Diff([]string{"create a", "create revision 2"}, f.take()); diff != "" {
		t.Fatalf("surge step (-want +got):\n%s", diff)
	}
	// The new pod is not available yet: the old one stays.
	f.sync()
	if got := f.take(); len(got) != 0 {
		t.Fatalf("before the new pod is available: %v", got)
	}
	f.runPods()
	f.sync()
	if diff := cmp.Diff([]string{"create b", "delete agent-1"}, f.take()); diff != "" {
		t.Fatalf("new pod available (-want +got):\n%s", diff)
	}
	rollout(t, f, "agent:2", 3, 0, 2)
}

func TestOnDeleteReplacesOnlyDeletedPods(t *testing.T) {
	ds := newDS(func(ds *appsv1.DaemonSet) {
		ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
	})
	f := newFixture(t, ds, newNode("a", nil), newNode("b", nil))
	f.sync()
	f.runPods()
	f.sync()
	f.take()
	f.changeTemplate("agent:2")
	f.sync()
	if diff := cmp.Diff([]string{"create revision 2"}, f.take()); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if st := f.ds().Status; st.UpdatedNumberScheduled != 0 || st.NumberAvailable != 2 {
		t.Errorf("status = %+v", st)
	}
	f.podIdx.DeleteKey("ns/agent-1")
	f.sync()
	if diff := cmp.Diff([]string{"create a"}, f.take()); diff != "" {
		t.Fatalf("after a delete (-want +got):\n%s", diff)
	}
	if _, updated := f.podsOnNodes("agent:2"); updated != 1 {
		t.Errorf("updated pods = %d, want 1", updated)
	}
}

func TestRevisionsRenumberAndPrune(t *testing.T) {
	f := newFixture(t, newDS(func(ds *appsv1.DaemonSet) {
		ds.Spec.RevisionHistoryLimit = ptrTo[int32](1)
		ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
	}), newNode("a", nil))
	f.sync()
	f.runPods()
	f.changeTemplate("agent:2")
	f.sync()
	f.changeTemplate("agent:3")
	f.sync()
	got := map[int64]bool{}
	for _, r := range f.revIdx.List() {
		got[r.Revision] = true
	}
	// Revision 1 is what the pod runs: kept past the limit; 2 is pruned.
	if diff := cmp.Diff(map[int64]bool{1: true, 3: true}, got); diff != "" {
		t.Fatalf("revisions (-want +got):\n%s", diff)
	}
	// Back to the first template: its revision is renumbered past the others.
	f.take()
	f.changeTemplate("agent:1")
	f.sync()
	if a := f.take(); !slices.ContainsFunc(a, func(s string) bool { return len(s) > 16 && s[:16] == "update revision " && s[len(s)-4:] == "to 4" }) {
		t.Errorf("actions = %v, want the first revision renumbered to 4", a)
	}
}
