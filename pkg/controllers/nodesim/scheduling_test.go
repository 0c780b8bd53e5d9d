package nodesim

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/cache"
)

func TestFitsNodeAffinity(t *testing.T) {
	node := readyNode(func(n *corev1.Node) { n.Labels["zone"] = "a"; n.Labels["gen"] = "5" })
	term := func(reqs ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: reqs}
	}
	req := func(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
	}
	name := func(op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: metav1.ObjectNameField, Operator: op, Values: values}}}
	}
	for _, tc := range []struct {
		name  string
		terms []corev1.NodeSelectorTerm
		fits  bool
	}{
		{"In matches", []corev1.NodeSelectorTerm{term(req("zone", corev1.NodeSelectorOpIn, "a", "b"))}, true},
		{"In misses", []corev1.NodeSelectorTerm{term(req("zone", corev1.NodeSelectorOpIn, "b"))}, false},
		{"NotIn", []corev1.NodeSelectorTerm{term(req("zone", corev1.NodeSelectorOpNotIn, "b"))}, true},
		{"NotIn on the value", []corev1.NodeSelectorTerm{term(req("zone", corev1.NodeSelectorOpNotIn, "a"))}, false},
		{"NotIn on a missing label", []corev1.NodeSelectorTerm{term(req("rack", corev1.NodeSelectorOpNotIn, "r1"))}, true},
		{"Exists", []corev1.NodeSelectorTerm{term(req("zone", corev1.NodeSelectorOpExists))}, true},
		{"DoesNotExist", []corev1.NodeSelectorTerm{term(req("zone", corev1.NodeSelectorOpDoesNotExist))}, false},
		{"Gt", []corev1.NodeSelectorTerm{term(req("gen", corev1.NodeSelectorOpGt, "4"))}, true},
		{"Gt equal fails", []corev1.NodeSelectorTerm{term(req("gen", corev1.NodeSelectorOpGt, "5"))}, false},
		{"Lt", []corev1.NodeSelectorTerm{term(req("gen", corev1.NodeSelectorOpLt, "6"))}, true},
		{"Lt on a non-integer label fails", []corev1.NodeSelectorTerm{term(req("zone", corev1.NodeSelectorOpLt, "6"))}, false},
		{"expressions of a term are ANDed", []corev1.NodeSelectorTerm{term(req("zone", corev1.NodeSelectorOpIn, "a"), req("gen", corev1.NodeSelectorOpIn, "4"))}, false},
		{"terms are ORed", []corev1.NodeSelectorTerm{term(req("zone", corev1.NodeSelectorOpIn, "b")), term(req("gen", corev1.NodeSelectorOpIn, "5"))}, true},
		{"matchFields metadata.name In", []corev1.NodeSelectorTerm{name(corev1.NodeSelectorOpIn, "n")}, true},
		{"matchFields metadata.name In another", []corev1.NodeSelectorTerm{name(corev1.NodeSelectorOpIn, "other")}, false},
		{"matchFields metadata.name NotIn", []corev1.NodeSelectorTerm{name(corev1.NodeSelectorOpNotIn, "other")}, true},
		{"an empty term matches nothing", []corev1.NodeSelectorTerm{{}}, false},
		{"no terms match nothing", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: tc.terms},
			}}}}
			got := fits(pod, node)
			if tc.fits != (got == "") {
				t.Errorf("fits = %q, want fits=%v", got, tc.fits)
			}
			if !tc.fits && got != reasonNodeSelector {
				t.Errorf("reason = %q, want %q", got, reasonNodeSelector)
			}
		})
	}
}

func TestFitsCordonedAndNotReadyByToleration(t *testing.T) {
	cordoned := readyNode(func(n *corev1.Node) { n.Spec.Unschedulable = true })
	notReady := readyNode(func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse })
	tolerant := &corev1.Pod{Spec: corev1.PodSpec{Tolerations: []corev1.Toleration{
		{Key: "node.kubernetes.io/unschedulable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists},
	}}}
	if got := fits(tolerant, cordoned); got != "" {
		t.Errorf("pod tolerating unschedulable on a cordoned node: %q", got)
	}
	if got := fits(tolerant, notReady); got != "" {
		t.Errorf("pod tolerating not-ready on a not ready node: %q", got)
	}
	if got := fits(&corev1.Pod{}, cordoned); got != reasonNodeUnschedulable {
		t.Errorf("plain pod on a cordoned node: %q", got)
	}
}

func TestPodRequestsInitContainersAndOverhead(t *testing.T) {
	rl := func(cpu, mem string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}
	}
	always := corev1.ContainerRestartPolicyAlways
	for _, tc := range []struct {
		name     string
		spec     corev1.PodSpec
		cpu, mem string
	}{
		{"containers add up", corev1.PodSpec{Containers: []corev1.Container{{Resources: rl("100m", "64Mi")}, {Resources: rl("200m", "64Mi")}}}, "300m", "128Mi"},
		{"an init container larger than the sum wins",
			corev1.PodSpec{InitContainers: []corev1.Container{{Resources: rl("1", "32Mi")}}, Containers: []corev1.Container{{Resources: rl("100m", "64Mi")}}}, "1", "64Mi"},
		{"sidecars add to containers and to later init containers",
			corev1.PodSpec{InitContainers: []corev1.Container{{Resources: rl("100m", "16Mi"), RestartPolicy: &always}, {Resources: rl("500m", "16Mi")}},
				Containers: []corev1.Container{{Resources: rl("100m", "16Mi")}}}, "600m", "32Mi"},
		{"overhead is added", corev1.PodSpec{Containers: []corev1.Container{{Resources: rl("100m", "64Mi")}},
			Overhead: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}}, "350m", "64Mi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: tc.spec}
			got := podRequestsOf(pod)
			if c := got[corev1.ResourceCPU]; c.Cmp(resource.MustParse(tc.cpu)) != 0 {
				t.Errorf("cpu = %s, want %s", c.String(), tc.cpu)
			}
			if m := got[corev1.ResourceMemory]; m.Cmp(resource.MustParse(tc.mem)) != 0 {
				t.Errorf("memory = %s, want %s", m.String(), tc.mem)
			}
		})
	}
}

// schedFixture is a syncer over three registered nodes of 2 CPUs and 4Gi.
func schedFixture(t *testing.T, edit func(name string, n *corev1.Node)) *syncer {
	t.Helper()
	idx, err := cache.NewIndexer(cache.IndexerConfig[*corev1.Node]{})
	if err != nil {
		t.Fatal(err)
	}
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("110")}
	var specs []nodeSpec
	for _, name := range []string{"n0", "n1", "n2"} {
		specs = append(specs, nodeSpec{name: name, capacity: capacity, maxPods: 110})
		n := readyNode(func(n *corev1.Node) {
			n.Name = name
			n.Status.Allocatable = capacity.DeepCopy()
		})
		if edit != nil {
			edit(name, n)
		}
		if err := idx.Add(n); err != nil {
			t.Fatal(err)
		}
	}
	return &syncer{
		nodeLister: cache.NewLister(idx, corev1.Resource("nodes")),
		nodes:      newNodeSet(specs),
		assumed:    map[string]string{}, bound: map[string]string{}, load: map[string]int64{}, states: map[string]*podState{},
	}
}

func cpuPod(name, cpu string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
		}}}},
	}
}

func TestChooseNodeCountsRequestsOfBoundAndAssumedPods(t *testing.T) {
	s := schedFixture(t, nil)
	// Three pods of 1.5 CPUs take a node each; a fourth fits none.
	for i, name := range []string{"a", "b", "c"} {
		node, why := s.chooseNode("ns/"+name, cpuPod(name, "1500m"))
		if node == "" {
			t.Fatalf("pod %d: %s", i, why)
		}
	}
	_, why := s.chooseNode("ns/d", cpuPod("d", "1500m"))
	want := "0/3 nodes are available: 3 Insufficient cpu. no new claims to deallocate, preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
	if why != want {
		t.Errorf("message = %q\nwant      %q", why, want)
	}
	// A small pod still fits next to them.
	if node, why := s.chooseNode("ns/e", cpuPod("e", "500m")); node == "" {
		t.Errorf("500m pod: %s", why)
	}
	// The bound pods finish: their CPU is free again.
	for _, name := range []string{"a", "b", "c", "e"} {
		p := cpuPod(name, "1500m")
		if name == "e" {
			p = cpuPod(name, "500m")
		}
		p.Spec.NodeName = s.assumed["ns/"+name]
		s.observe(p)
		p.Status.Phase = corev1.PodSucceeded
		s.observe(p)
	}
	if node, why := s.chooseNode("ns/d", cpuPod("d", "1500m")); node == "" {
		t.Errorf("after the pods finished: %s", why)
	}
}

func TestUnschedulableMessageAsTheScheduler(t *testing.T) {
	never := corev1.PreemptNever
	for _, tc := range []struct {
		name string
		edit func(name string, n *corev1.Node)
		pod  func(*corev1.Pod)
		want string
	}{
		{
			name: "affinity and taints",
			edit: func(name string, n *corev1.Node) {
				if name == "n0" {
					n.Labels["zone"] = "x"
				} else {
					n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}}
				}
			},
			pod: func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "y"} },
			want: "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 node(s) had untolerated taint(s). " +
				"no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
		},
		{
			name: "cordoned and short of memory",
			edit: func(name string, n *corev1.Node) {
				if name == "n2" {
					n.Spec.Unschedulable = true
				}
			},
			pod: func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("8Gi")
			},
			want: "0/3 nodes are available: 1 node(s) were unschedulable, 2 Insufficient memory. " +
				"no new claims to deallocate, preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod.",
		},
		{
			name: "preemptionPolicy Never",
			pod: func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("3")
				p.Spec.PreemptionPolicy = &never
			},
			want: "0/3 nodes are available: 3 Insufficient cpu. no new claims to deallocate, preemption: not eligible due to preemptionPolicy=Never.",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := schedFixture(t, tc.edit)
			pod := cpuPod("p", "100m")
			if tc.pod != nil {
				tc.pod(pod)
			}
			node, why := s.chooseNode("ns/p", pod)
			if node != "" || why != tc.want {
				t.Errorf("chooseNode = %q, %q\nwant message %q", node, why, tc.want)
			}
		})
	}
}

func TestChooseNodeFollowsRequiredAffinityToOneNode(t *testing.T) {
	s := schedFixture(t, nil)
	pod := cpuPod("ds", "100m")
	pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{"n2"}}}}},
	}}}
	// Load the other nodes less, so that only the affinity can choose n2.
	s.load["n2"] = 50
	if node, why := s.chooseNode("ns/ds", pod); node != "n2" {
		t.Errorf("chooseNode = %q (%s), want n2", node, why)
	}
}
