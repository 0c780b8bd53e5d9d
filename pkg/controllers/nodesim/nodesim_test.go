package nodesim

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/testenv"
)

// simEnv is a testenv environment running a Simulator on a fake clock.
type simEnv struct {
	t     *testing.T
	env   *testenv.Env
	clock *clocktesting.FakeClock
	ns    string
	pods  *client.ResourceClient[*corev1.Pod]
	// sim is the running simulator, set once New has returned.
	sim *atomic.Pointer[Simulator]
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// startSim runs a Simulator with 3 nodes, no startup delay unless edit
// sets one, on a fake clock at t0, in an environment started with opts.
func startSim(t *testing.T, edit func(*Config), opts ...testenv.Option) *simEnv {
	t.Helper()
	clk := clocktesting.NewFakeClock(t0)
	var running atomic.Pointer[Simulator]
	env := testenv.Start(t, append(opts, testenv.WithController(Name, func(ctx context.Context, env *testenv.Env) error {
		logger := slog.New(slog.DiscardHandler)
		f, err := informers.New(informers.Config{Client: env.Client, Logger: logger})
		if err != nil {
			return err
		}
		defer f.Shutdown()
		cfg := Config{Client: env.Client, Informers: f, Clock: clk, Logger: logger, StartupDelay: -1}
		if edit != nil {
			edit(&cfg)
		}
		sim, err := New(cfg)
		if err != nil {
			return err
		}
		running.Store(sim)
		f.Start(ctx)
		return sim.Run(ctx, 2)
	}))...)
	ns := env.Namespace(t)
	return &simEnv{t: t, env: env, clock: clk, ns: ns, pods: client.NewResource(env.Client, client.Pods).Namespace(ns), sim: &running}
}

func (e *simEnv) createPod(name string, edit func(*corev1.Pod)) *corev1.Pod {
	e.t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}, {Name: "sidecar", Image: "busybox"}}},
	}
	if edit != nil {
		edit(pod)
	}
	created, err := e.pods.Create(e.t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return created
}

func (e *simEnv) waitPod(name string, cond func(*corev1.Pod) bool) *corev1.Pod {
	e.t.Helper()
	return testenv.WaitFor(e.t, e.env, client.Pods, e.ns+"/"+name, cond)
}

func runningReady(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning && isPodReady(p) }

func TestPodsRunOnLeastLoadedNodes(t *testing.T) {
	t.Parallel()
	e := startSim(t, nil)
	const n = 6
	for i := range n {
		e.createPod(fmt.Sprintf("p%d", i), nil)
	}
	perNode := map[string]int{}
	ips := map[string]string{}
	for i := range n {
		p := e.waitPod(fmt.Sprintf("p%d", i), runningReady)
		perNode[p.Spec.NodeName]++
		if other, dup := ips[p.Status.PodIP]; dup || p.Status.PodIP == "" {
			t.Errorf("pod %s has IP %q, also held by %q", p.Name, p.Status.PodIP, other)
		}
		ips[p.Status.PodIP] = p.Name
		if p.Status.HostIP == "" || p.Status.StartTime == nil || len(p.Status.PodIPs) != 1 {
			t.Errorf("pod %s: hostIP %q, startTime %v, podIPs %v", p.Name, p.Status.HostIP, p.Status.StartTime, p.Status.PodIPs)
		}
		for _, typ := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
			if c := podCondition(&p.Status, typ); c == nil || c.Status != corev1.ConditionTrue {
				t.Errorf("pod %s: condition %s = %+v", p.Name, typ, c)
			}
		}
		if len(p.Status.ContainerStatuses) != 2 {
			t.Fatalf("pod %s: %d container statuses, want 2", p.Name, len(p.Status.ContainerStatuses))
		}
		for _, cs := range p.Status.ContainerStatuses {
			if !cs.Ready || cs.Started == nil || !*cs.Started || cs.State.Running == nil || cs.ImageID == "" || cs.ContainerID == "" || cs.Image == "" {
				t.Errorf("pod %s: container status %+v", p.Name, cs)
			}
		}
	}
	want := map[string]int{"kplane-node-0": 2, "kplane-node-1": 2, "kplane-node-2": 2}
	if fmt.Sprint(perNode) != fmt.Sprint(want) {
		t.Errorf("pods per node = %v, want %v", perNode, want)
	}
}

func TestNodesRegistered(t *testing.T) {
	t.Parallel()
	e := startSim(t, func(c *Config) { c.Nodes = 2; c.NamePrefix = "sim-"; c.Labels = map[string]string{"zone": "a"} })
	for _, name := range []string{"sim-0", "sim-1"} {
		n := testenv.WaitFor(t, e.env, client.Nodes, name, func(n *corev1.Node) bool { return nodeCondition(n, corev1.NodeReady) != nil })
		if c := nodeCondition(n, corev1.NodeReady); c.Status != corev1.ConditionTrue {
			t.Errorf("%s Ready = %v", name, c.Status)
		}
		if got := n.Status.Allocatable.Pods().Value(); got != DefaultMaxPods {
			t.Errorf("%s allocatable pods = %d", name, got)
		}
		if n.Status.Capacity.Cpu().IsZero() || n.Status.Capacity.Memory().IsZero() {
			t.Errorf("%s capacity = %v", name, n.Status.Capacity)
		}
		if n.Status.NodeInfo.KubeletVersion != KubeletVersion || len(n.Status.Addresses) == 0 {
			t.Errorf("%s nodeInfo %+v, addresses %v", name, n.Status.NodeInfo, n.Status.Addresses)
		}
		if n.Labels["zone"] != "a" || n.Labels[corev1.LabelHostname] != name {
			t.Errorf("%s labels = %v", name, n.Labels)
		}
	}
}

func TestLeasesRenewed(t *testing.T) {
	t.Parallel()
	e := startSim(t, nil)
	renewedAt := func(at time.Time) func(*coordinationv1.Lease) bool {
		return func(l *coordinationv1.Lease) bool {
			return l.Spec.RenewTime != nil && l.Spec.RenewTime.Time.Equal(at)
		}
	}
	for i := range DefaultNodes {
		l := testenv.WaitFor(t, e.env, client.Leases, fmt.Sprintf("%s/%s%d", NodeLeaseNamespace, DefaultNamePrefix, i), renewedAt(t0))
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != l.Name || l.Spec.LeaseDurationSeconds == nil || *l.Spec.LeaseDurationSeconds != 40 {
			t.Errorf("lease %s spec = %+v", l.Name, l.Spec)
		}
	}
	for step := 1; step <= 2; step++ {
		e.clock.Step(DefaultHeartbeatInterval)
		for i := range DefaultNodes {
			testenv.WaitFor(t, e.env, client.Leases, fmt.Sprintf("%s/%s%d", NodeLeaseNamespace, DefaultNamePrefix, i),
				renewedAt(t0.Add(time.Duration(step)*DefaultHeartbeatInterval)))
		}
	}
}

func TestDeletingBoundPodRemovesIt(t *testing.T) {
	t.Parallel()
	e := startSim(t, func(c *Config) { c.TerminationDelay = 5 * time.Second })
	e.createPod("p", nil)
	e.waitPod("p", runningReady)
	if err := e.pods.Delete(t.Context(), "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Graceful: the pod stays until its containers stop.
	e.waitPod("p", func(p *corev1.Pod) bool { return p.DeletionTimestamp != nil })
	// The simulator arms its wake-up for the containers' stop when it sees
	// the deletion, which may be after this test does: stepping the fake
	// clock before that would step past nothing.
	key := e.ns + "/p"
	if err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		sim := e.sim.Load()
		if sim == nil {
			return false, nil
		}
		_, armed := sim.wakeups.Pending(key)
		return armed, nil
	}); err != nil {
		t.Fatalf("the simulator never armed the stop of %s: %v", key, err)
	}
	if _, err := e.pods.Get(t.Context(), "p", metav1.GetOptions{}); err != nil {
		t.Fatalf("pod removed before its containers stopped: %v", err)
	}
	e.clock.Step(5 * time.Second)
	testenv.WaitForDeletion(t, e.env, client.Pods, e.ns+"/p")
}

func TestStartupDelay(t *testing.T) {
	t.Parallel()
	e := startSim(t, func(c *Config) { c.StartupDelay = 3 * time.Second })
	e.createPod("p", nil)
	p := e.waitPod("p", func(p *corev1.Pod) bool { return p.Status.StartTime != nil })
	if p.Status.Phase != corev1.PodPending || isPodReady(p) ||
		p.Status.ContainerStatuses[0].State.Waiting == nil || p.Status.ContainerStatuses[0].State.Waiting.Reason != reasonContainerCreating {
		t.Errorf("before the startup delay: phase %s, statuses %+v", p.Status.Phase, p.Status.ContainerStatuses)
	}
	e.clock.Step(3 * time.Second)
	e.waitPod("p", runningReady)
}

func TestUnschedulableUntilNodeFits(t *testing.T) {
	t.Parallel()
	e := startSim(t, nil)
	e.createPod("p", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} })
	p := e.waitPod("p", func(p *corev1.Pod) bool { return unschedulable(p) })
	c := podCondition(&p.Status, corev1.PodScheduled)
	if want := "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. " +
		"no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."; c.Reason != reasonUnschedulable || c.Message != want {
		t.Errorf("PodScheduled = %s %q, want Unschedulable %q", c.Reason, c.Message, want)
	}
	nodes := client.NewResource(e.env.Client, client.Nodes)
	if _, err := nodes.Patch(t.Context(), "kplane-node-1", "application/merge-patch+json", []byte(`{"metadata":{"labels":{"disk":"ssd"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	p = e.waitPod("p", runningReady)
	if p.Spec.NodeName != "kplane-node-1" {
		t.Errorf("pod on %q, want kplane-node-1", p.Spec.NodeName)
	}
}

func TestCordonedNodesAreSkipped(t *testing.T) {
	t.Parallel()
	e := startSim(t, nil)
	nodes := client.NewResource(e.env.Client, client.Nodes)
	for _, n := range []string{"kplane-node-0", "kplane-node-2"} {
		testenv.WaitFor(t, e.env, client.Nodes, n, func(n *corev1.Node) bool { return nodeCondition(n, corev1.NodeReady) != nil })
		if _, err := nodes.Patch(t.Context(), n, "application/merge-patch+json", []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, e.env, client.Nodes, n, func(n *corev1.Node) bool { return n.Spec.Unschedulable })
	}
	// The simulator's node cache may lag the patches: a pod it sees first
	// may still land on a cordoned node, so look at a pod created after the
	// cache must have caught up with both patches.
	for i := range 3 {
		name := fmt.Sprintf("p%d", i)
		e.createPod(name, nil)
		p := e.waitPod(name, runningReady)
		if i > 0 && p.Spec.NodeName != "kplane-node-1" {
			t.Errorf("pod %s on %q, want kplane-node-1", name, p.Spec.NodeName)
		}
	}
}

func TestPresetNodeNameRuns(t *testing.T) {
	t.Parallel()
	e := startSim(t, nil)
	e.createPod("p", func(p *corev1.Pod) { p.Spec.NodeName = "kplane-node-2" })
	p := e.waitPod("p", runningReady)
	if p.Spec.NodeName != "kplane-node-2" || p.Status.HostIP != "172.18.0.4" {
		t.Errorf("node %q hostIP %q", p.Spec.NodeName, p.Status.HostIP)
	}
	// A pod for a node the simulator does not run is left alone.
	e.createPod("elsewhere", func(p *corev1.Pod) { p.Spec.NodeName = "real-node" })
	e.createPod("marker", func(p *corev1.Pod) { p.Spec.NodeName = "kplane-node-0" })
	e.waitPod("marker", runningReady)
	got, err := e.pods.Get(t.Context(), "elsewhere", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != corev1.PodPending || got.Status.StartTime != nil {
		t.Errorf("pod on a foreign node was touched: %+v", got.Status)
	}
}

func TestCompleteAfterAnnotation(t *testing.T) {
	t.Parallel()
	e := startSim(t, nil)
	e.createPod("job", func(p *corev1.Pod) {
		p.Spec.RestartPolicy = corev1.RestartPolicyNever
		p.Annotations = map[string]string{CompleteAfterAnnotation: "30s"}
	})
	e.waitPod("job", runningReady)
	e.clock.Step(30 * time.Second)
	p := e.waitPod("job", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 || cs.Ready {
			t.Errorf("container status %+v", cs)
		}
	}
}

// With a RunTime, a Job-like pod without run annotations succeeds that
// long after it started; a restartPolicy Always pod keeps running.
func TestRunTimeFinishesUnannotatedJobPods(t *testing.T) {
	t.Parallel()
	e := startSim(t, func(c *Config) { c.RunTime = 5 * time.Second })
	e.createPod("job", func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure })
	e.createPod("server", nil)
	e.waitPod("job", runningReady)
	e.waitPod("server", runningReady)
	e.clock.Step(5 * time.Second)
	p := e.waitPod("job", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 {
			t.Errorf("container status %+v", cs)
		}
	}
	if got, err := e.pods.Get(t.Context(), "server", metav1.GetOptions{}); err != nil || got.Status.Phase != corev1.PodRunning {
		t.Fatalf("restartPolicy Always pod: %v, %v", got.Status.Phase, err)
	}
}

func TestFullNodeTakesPodsWhenRoomFrees(t *testing.T) {
	t.Parallel()
	e := startSim(t, func(c *Config) {
		c.Nodes = 1
		c.Capacity = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}
	})
	e.createPod("first", nil)
	e.waitPod("first", runningReady)
	e.createPod("second", nil)
	p := e.waitPod("second", unschedulable)
	if c := podCondition(&p.Status, corev1.PodScheduled); c.Message != "0/1 nodes are available: 1 Too many pods. "+
		"no new claims to deallocate, preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod." {
		t.Errorf("PodScheduled message = %q", c.Message)
	}
	if err := e.pods.Delete(t.Context(), "first", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitPod("second", runningReady)
}

func TestPodIPsUniqueWithinNodePodCIDRs(t *testing.T) {
	t.Parallel()
	e := startSim(t, nil)
	cidrs := map[string]netip.Prefix{}
	hostIPs := map[string]string{}
	for i := range DefaultNodes {
		name := fmt.Sprintf("%s%d", DefaultNamePrefix, i)
		n := testenv.WaitFor(t, e.env, client.Nodes, name, func(n *corev1.Node) bool { return n.Spec.PodCIDR != "" })
		c, err := netip.ParsePrefix(n.Spec.PodCIDR)
		if err != nil || !slices.Equal(n.Spec.PodCIDRs, []string{n.Spec.PodCIDR}) {
			t.Fatalf("%s: podCIDR %q (%v), podCIDRs %v", name, n.Spec.PodCIDR, err, n.Spec.PodCIDRs)
		}
		for other, oc := range cidrs {
			if oc.Overlaps(c) {
				t.Errorf("%s pod CIDR %s overlaps %s's %s", name, c, other, oc)
			}
		}
		cidrs[name] = c
	}
	const pods = 30
	for i := range pods {
		e.createPod(fmt.Sprintf("p%d", i), nil)
	}
	ips := map[string]string{}
	for i := range pods {
		p := e.waitPod(fmt.Sprintf("p%d", i), runningReady)
		ip, err := netip.ParseAddr(p.Status.PodIP)
		if err != nil || !cidrs[p.Spec.NodeName].Contains(ip) {
			t.Errorf("pod %s on %s has IP %q, outside the node's pod CIDR %s", p.Name, p.Spec.NodeName, p.Status.PodIP, cidrs[p.Spec.NodeName])
		}
		if other, dup := ips[p.Status.PodIP]; dup {
			t.Errorf("pods %s and %s share IP %s", other, p.Name, p.Status.PodIP)
		}
		ips[p.Status.PodIP] = p.Name
		if h, ok := hostIPs[p.Spec.NodeName]; ok && h != p.Status.HostIP {
			t.Errorf("pod %s hostIP %s, another pod on %s has %s", p.Name, p.Status.HostIP, p.Spec.NodeName, h)
		}
		hostIPs[p.Spec.NodeName] = p.Status.HostIP
	}
	if len(hostIPs) != DefaultNodes {
		t.Fatalf("pods landed on %d nodes, want %d", len(hostIPs), DefaultNodes)
	}
	seen := map[string]string{}
	for node, h := range hostIPs {
		if other, dup := seen[h]; dup {
			t.Errorf("nodes %s and %s share host IP %s", other, node, h)
		}
		seen[h] = node
	}
}

// TestRestartSkipsLiveIPs starts a simulator over pods that an earlier run
// left running, holding the first addresses of their nodes' pod CIDRs.
func TestRestartSkipsLiveIPs(t *testing.T) {
	t.Parallel()
	const ns = "earlier"
	objs := []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}}
	live := map[string]string{}
	for i := range 2 {
		node := fmt.Sprintf("%s%d", DefaultNamePrefix, i)
		ip := firstPodIP(nodePodCIDR(i))
		for j := range 4 {
			name := fmt.Sprintf("old-%d-%d", i, j)
			objs = append(objs, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
				Status: corev1.PodStatus{
					Phase: corev1.PodRunning, PodIP: ip.String(), PodIPs: []corev1.PodIP{{IP: ip.String()}},
					Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
				},
			})
			live[ip.String()] = name
			ip = ip.Next()
		}
	}
	e := startSim(t, nil, testenv.WithObjects(objs...))
	for i := range 12 {
		e.createPod(fmt.Sprintf("p%d", i), func(p *corev1.Pod) { p.Spec.NodeName = fmt.Sprintf("%s%d", DefaultNamePrefix, i%2) })
	}
	ips := map[string]string{}
	for i := range 12 {
		p := e.waitPod(fmt.Sprintf("p%d", i), runningReady)
		if old, taken := live[p.Status.PodIP]; taken {
			t.Errorf("pod %s got %s, held by running pod %s/%s", p.Name, p.Status.PodIP, ns, old)
		}
		if other, dup := ips[p.Status.PodIP]; dup || p.Status.PodIP == "" {
			t.Errorf("pod %s got %q, also held by %q", p.Name, p.Status.PodIP, other)
		}
		ips[p.Status.PodIP] = p.Name
	}
	for ip, name := range live {
		if p := testenv.WaitFor(t, e.env, client.Pods, ns+"/"+name, runningReady); p.Status.PodIP != ip {
			t.Errorf("pod %s IP %s, want its own %s", name, p.Status.PodIP, ip)
		}
	}
}

func TestNoSchedulingLeavesUnboundPodsToAnotherScheduler(t *testing.T) {
	t.Parallel()
	e := startSim(t, func(c *Config) { c.NoScheduling = true })
	unbound := e.createPod("unbound", nil)
	// A pod bound by hand runs; once it does, the simulator has long seen
	// the unbound pod created before it.
	e.createPod("marker", func(p *corev1.Pod) { p.Spec.NodeName = "kplane-node-0" })
	e.waitPod("marker", runningReady)
	got, err := e.pods.Get(t.Context(), "unbound", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.NodeName != "" || len(got.Status.Conditions) != 0 {
		t.Fatalf("simulator scheduled the pod: node %q, conditions %+v", got.Spec.NodeName, got.Status.Conditions)
	}
	// Bound by another scheduler, through the binding subresource, it runs.
	api := clientAPI{c: e.env.Client}
	if err := api.Bind(t.Context(), unbound, "kplane-node-1"); err != nil {
		t.Fatal(err)
	}
	if p := e.waitPod("unbound", runningReady); p.Spec.NodeName != "kplane-node-1" {
		t.Errorf("pod runs on %q, want kplane-node-1", p.Spec.NodeName)
	}
}
