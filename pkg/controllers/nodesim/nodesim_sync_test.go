package nodesim

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func readyNode(edit func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"disk": "ssd"}},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	if edit != nil {
		edit(n)
	}
	return n
}

func TestFits(t *testing.T) {
	noSchedule := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	for _, tc := range []struct {
		name string
		pod  corev1.PodSpec
		node *corev1.Node
		want string // "" fits; else a part of the reason
	}{
		{"plain", corev1.PodSpec{}, readyNode(nil), ""},
		{"selector matches", corev1.PodSpec{NodeSelector: map[string]string{"disk": "ssd"}}, readyNode(nil), ""},
		{"selector misses", corev1.PodSpec{NodeSelector: map[string]string{"disk": "hdd"}}, readyNode(nil), "selector"},
		{"cordoned", corev1.PodSpec{}, readyNode(func(n *corev1.Node) { n.Spec.Unschedulable = true }), "unschedulable"},
		{"not ready", corev1.PodSpec{}, readyNode(func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }), "not ready"},
		{"no status", corev1.PodSpec{}, readyNode(func(n *corev1.Node) { n.Status.Conditions = nil }), "not ready"},
		{"untolerated taint", corev1.PodSpec{}, readyNode(func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{noSchedule} }), "taint"},
		{"tolerated by Equal", corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu"}}},
			readyNode(func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{noSchedule} }), ""},
		{"wrong value", corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: "dedicated", Value: "cpu"}}},
			readyNode(func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{noSchedule} }), "taint"},
		{"tolerated by Exists", corev1.PodSpec{Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
			readyNode(func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{noSchedule} }), ""},
		{"wrong effect", corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}},
			readyNode(func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{noSchedule} }), "taint"},
		{"PreferNoSchedule ignored", corev1.PodSpec{},
			readyNode(func(n *corev1.Node) {
				n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectPreferNoSchedule}}
			}), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fits(&corev1.Pod{Spec: tc.pod}, tc.node)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("fits = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestImageAndContainerIDs(t *testing.T) {
	for image, prefix := range map[string]string{
		"nginx:1.27":                "nginx@sha256:",
		"registry:5000/app":         "registry:5000/app@sha256:",
		"registry:5000/app:v1":      "registry:5000/app@sha256:",
		"busybox@sha256:0123456789": "busybox@sha256:",
	} {
		if got := imageID(image); !strings.HasPrefix(got, prefix) || imageID(image) != got {
			t.Errorf("imageID(%q) = %q, want prefix %q and stable", image, got, prefix)
		}
	}
	if containerID("u1", "c") == containerID("u2", "c") || containerID("u1", "c") == containerID("u1", "d") {
		t.Error("container ids collide")
	}
}

func TestSetPodConditionKeepsTransitionTime(t *testing.T) {
	var st corev1.PodStatus
	setPodCondition(&st, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}, t0)
	later := t0.Add(5 * 60e9)
	setPodCondition(&st, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}, later)
	if !st.Conditions[0].LastTransitionTime.Time.Equal(t0) {
		t.Errorf("unchanged status moved the transition time to %v", st.Conditions[0].LastTransitionTime)
	}
	setPodCondition(&st, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse}, later)
	if len(st.Conditions) != 1 || !st.Conditions[0].LastTransitionTime.Time.Equal(later) {
		t.Errorf("conditions = %+v", st.Conditions)
	}
}

func TestLoadsFollowObservedPods(t *testing.T) {
	s := &syncer{
		nodes:   newNodeSet([]nodeSpec{{name: "a"}, {name: "b"}}),
		assumed: map[string]string{}, bound: map[string]string{}, load: map[string]int64{},
	}
	pod := func(name, node string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
	}
	s.observe(pod("p1", "a", corev1.PodRunning))
	s.observe(pod("p1", "a", corev1.PodRunning)) // seen again: counted once
	s.observe(pod("p2", "b", corev1.PodPending))
	s.observe(pod("p3", "elsewhere", corev1.PodRunning))
	s.observe(pod("p4", "", corev1.PodPending))
	s.assumed["ns/p4"] = "b"
	if got := s.loads(); got["a"] != 1 || got["b"] != 2 || len(got) != 2 {
		t.Errorf("loads = %v, want a:1 b:2 (one assumed)", got)
	}
	s.observe(pod("p4", "b", corev1.PodPending)) // the binding arrives
	s.observe(pod("p1", "a", corev1.PodSucceeded))
	s.unobserve("ns/p2")
	if got := s.loads(); got["a"] != 0 || got["b"] != 1 {
		t.Errorf("loads = %v, want a:0 b:1", got)
	}
	if len(s.assumed) != 0 {
		t.Errorf("assumed = %v after the binding was observed", s.assumed)
	}
}
