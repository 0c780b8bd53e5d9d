package podgc

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kplane/kplane/pkg/cache"
)

// fakeAPI records the writes of a pass in order.
type fakeAPI struct {
	mu      sync.Mutex
	actions []string
	patches map[string]string
	// nodes are the nodes a read past the cache finds.
	nodes map[string]bool
}

func (f *fakeAPI) PatchPodStatus(_ context.Context, ns, name string, data []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.actions = append(f.actions, "fail "+ns+"/"+name)
	f.patches[ns+"/"+name] = string(data)
	return nil
}

func (f *fakeAPI) DeletePod(_ context.Context, ns, name string, _ types.UID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.actions = append(f.actions, "delete "+ns+"/"+name)
	return nil
}

func (f *fakeAPI) NodeExists(_ context.Context, name string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.actions = append(f.actions, "get node "+name)
	return f.nodes[name], nil
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type fixture struct {
	c       *collector
	api     *fakeAPI
	nodeIdx *cache.Indexer[*corev1.Node]
	clock   *clocktesting.FakeClock
}

func newFixture(t *testing.T, threshold int, nodes []*corev1.Node, pods []*corev1.Pod) *fixture {
	t.Helper()
	podIdx, err := cache.NewIndexer(cache.IndexerConfig[*corev1.Pod]{})
	if err != nil {
		t.Fatal(err)
	}
	nodeIdx, err := cache.NewIndexer(cache.IndexerConfig[*corev1.Node]{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if err := podIdx.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range nodes {
		if err := nodeIdx.Add(n); err != nil {
			t.Fatal(err)
		}
	}
	api := &fakeAPI{patches: map[string]string{}, nodes: map[string]bool{}}
	clk := clocktesting.NewFakeClock(t0)
	return &fixture{
		api:     api,
		clock:   clk,
		nodeIdx: nodeIdx,
		c: &collector{
			podLister:    cache.NewLister(podIdx, corev1.Resource("pods")),
			nodeLister:   cache.NewLister(nodeIdx, corev1.Resource("nodes")),
			api:          api,
			clock:        clk,
			threshold:    threshold,
			quarantine:   DefaultQuarantine,
			missingSince: map[string]time.Time{},
		},
	}
}

func (f *fixture) pass(t *testing.T) []string {
	t.Helper()
	f.api.mu.Lock()
	f.api.actions = nil
	f.api.mu.Unlock()
	f.c.gc(t.Context())
	return f.api.actions
}

type podOpt func(*corev1.Pod)

func pod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name + "-uid"), CreationTimestamp: metav1.NewTime(t0)},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }
func onNode(n string) podOpt          { return func(p *corev1.Pod) { p.Spec.NodeName = n } }
func age(d time.Duration) podOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t0.Add(-d)) }
}
func terminating(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: t0} }
func evicted(p *corev1.Pod)     { p.Status.Phase, p.Status.Reason = corev1.PodFailed, "Evicted" }

func node(name string, ready bool, taints ...corev1.Taint) *corev1.Node {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}}},
	}
}

var outOfService = corev1.Taint{Key: corev1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute}

func TestGCOnePass(t *testing.T) {
	n1 := node("n1", true)
	tests := []struct {
		name      string
		threshold int
		nodes     []*corev1.Node
		pods      []*corev1.Pod
		want      []string
	}{{
		name:      "terminated pods within the threshold are kept",
		threshold: 2,
		nodes:     []*corev1.Node{n1},
		pods:      []*corev1.Pod{pod("a", onNode("n1"), phase(corev1.PodSucceeded)), pod("b", onNode("n1"), phase(corev1.PodFailed))},
	}, {
		name:      "terminated pods beyond the threshold are deleted evicted first then oldest first",
		threshold: 2,
		nodes:     []*corev1.Node{n1},
		pods: []*corev1.Pod{
			pod("new", onNode("n1"), phase(corev1.PodSucceeded), age(time.Minute)),
			pod("old", onNode("n1"), phase(corev1.PodSucceeded), age(time.Hour)),
			pod("older", onNode("n1"), phase(corev1.PodFailed), age(2*time.Hour)),
			pod("evicted", onNode("n1"), evicted),
			pod("running", onNode("n1"), age(3*time.Hour)),
		},
		want: []string{"delete ns/evicted", "delete ns/older"},
	}, {
		name:      "a negative threshold keeps every terminated pod",
		threshold: -1,
		nodes:     []*corev1.Node{n1},
		pods:      []*corev1.Pod{pod("a", onNode("n1"), phase(corev1.PodSucceeded))},
	}, {
		name:      "terminating pods on a not ready out-of-service node are failed and deleted",
		threshold: 10,
		nodes:     []*corev1.Node{node("down", false, outOfService)},
		pods:      []*corev1.Pod{pod("b", onNode("down"), terminating, age(time.Minute)), pod("a", onNode("down"), terminating, age(time.Hour)), pod("alive", onNode("down"))},
		want:      []string{"fail ns/a", "delete ns/a", "fail ns/b", "delete ns/b"},
	}, {
		name:      "terminating pods on a ready out-of-service node are kept",
		threshold: 10,
		nodes:     []*corev1.Node{node("up", true, outOfService)},
		pods:      []*corev1.Pod{pod("a", onNode("up"), terminating)},
	}, {
		name:      "terminating pods on a not ready node without the taint are kept",
		threshold: 10,
		nodes:     []*corev1.Node{node("down", false)},
		pods:      []*corev1.Pod{pod("a", onNode("down"), terminating)},
	}, {
		name:      "unscheduled terminating pods are failed and deleted",
		threshold: 10,
		pods:      []*corev1.Pod{pod("pending", terminating, phase(corev1.PodPending)), pod("unscheduled", phase(corev1.PodPending))},
		want:      []string{"fail ns/pending", "delete ns/pending"},
	}, {
		name:      "orphaned pods wait out the quarantine",
		threshold: 10,
		pods:      []*corev1.Pod{pod("a", onNode("gone"))},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.threshold, tt.nodes, tt.pods)
			if diff := cmp.Diff(tt.want, f.pass(t)); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGCOrphanedPods(t *testing.T) {
	pods := []*corev1.Pod{
		pod("running", onNode("gone")),
		pod("done", onNode("gone"), phase(corev1.PodSucceeded)),
		pod("elsewhere", onNode("n1")),
		pod("lagging", onNode("in-api")),
	}
	f := newFixture(t, 10, []*corev1.Node{node("n1", true)}, pods)
	f.api.nodes["in-api"] = true
	if got := f.pass(t); len(got) != 0 {
		t.Fatalf("first pass acted before the quarantine: %v", got)
	}
	f.clock.Step(DefaultQuarantine - time.Second)
	if got := f.pass(t); len(got) != 0 {
		t.Fatalf("pass acted within the quarantine: %v", got)
	}
	f.clock.Step(time.Second)
	want := []string{"get node gone", "get node in-api", "delete ns/done", "fail ns/running", "delete ns/running"}
	if diff := cmp.Diff(want, f.pass(t)); diff != "" {
		t.Fatalf("actions (-want +got):\n%s", diff)
	}
	var patch struct {
		Metadata struct{ UID string }
		Status   corev1.PodStatus
	}
	if err := json.Unmarshal([]byte(f.api.patches["ns/running"]), &patch); err != nil {
		t.Fatal(err)
	}
	wantStatus := corev1.PodStatus{Phase: corev1.PodFailed, Conditions: []corev1.PodCondition{{
		Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: ReasonDeletionByPodGC,
		Message: MessageNodeGone, LastTransitionTime: metav1.NewTime(t0.Add(DefaultQuarantine)),
	}}}
	if diff := cmp.Diff(wantStatus, patch.Status); diff != "" || patch.Metadata.UID != "running-uid" {
		t.Errorf("status patch uid %q, status (-want +got):\n%s", patch.Metadata.UID, diff)
	}
	// The node found in the API starts a new quarantine rather than being
	// read on every pass.
	if got := f.pass(t); len(got) != 0 {
		t.Errorf("pass after the check acted again: %v", got)
	}
}

func TestGCOrphanQuarantineRestartsWhenTheNodeReturns(t *testing.T) {
	f := newFixture(t, 10, nil, []*corev1.Pod{pod("a", onNode("flaky"))})
	f.pass(t)
	f.clock.Step(DefaultQuarantine / 2)
	// The node shows up in the cache, then vanishes again.
	if err := f.nodeIdx.Add(node("flaky", true)); err != nil {
		t.Fatal(err)
	}
	f.pass(t)
	if err := f.nodeIdx.Delete(node("flaky", true)); err != nil {
		t.Fatal(err)
	}
	f.pass(t)
	f.clock.Step(DefaultQuarantine / 2)
	if got := f.pass(t); len(got) != 0 {
		t.Fatalf("quarantine did not restart: %v", got)
	}
	f.clock.Step(DefaultQuarantine / 2)
	if diff := cmp.Diff([]string{"get node flaky", "fail ns/a", "delete ns/a"}, f.pass(t)); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
}
