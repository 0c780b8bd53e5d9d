package daemonset

import (
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/internal/nodefit"
)

// TemplateGenerationLabel on a daemon pod is the template generation of
// the DaemonSet it was made from.
const TemplateGenerationLabel = "pod-template-generation"

// The taint keys a daemon pod tolerates by default, as kubelets and the
// node lifecycle controller set them.
const (
	TaintNodeNotReady           = "node.kubernetes.io/not-ready"
	TaintNodeUnreachable        = "node.kubernetes.io/unreachable"
	TaintNodeDiskPressure       = "node.kubernetes.io/disk-pressure"
	TaintNodeMemoryPressure     = "node.kubernetes.io/memory-pressure"
	TaintNodePIDPressure        = "node.kubernetes.io/pid-pressure"
	TaintNodeUnschedulable      = "node.kubernetes.io/unschedulable"
	TaintNodeNetworkUnavailable = "node.kubernetes.io/network-unavailable"
)

// addDaemonTolerations adds the tolerations every daemon pod gets, as
// Kubernetes does: not-ready and unreachable NoExecute, so that a daemon
// pod stays on a failing node; disk-, memory- and pid-pressure and
// unschedulable NoSchedule, so that it lands on a cordoned or pressured
// node; and network-unavailable NoSchedule for host-network pods, which
// need no pod network. A toleration of the same key and effect the
// template has already is replaced.
func addDaemonTolerations(spec *corev1.PodSpec) {
	add := func(key string, effect corev1.TaintEffect) {
		t := corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect}
		for i := range spec.Tolerations {
			old := &spec.Tolerations[i]
			if old.Key == key && old.Effect == effect {
				*old = t
				return
			}
		}
		spec.Tolerations = append(spec.Tolerations, t)
	}
	add(TaintNodeNotReady, corev1.TaintEffectNoExecute)
	add(TaintNodeUnreachable, corev1.TaintEffectNoExecute)
	add(TaintNodeDiskPressure, corev1.TaintEffectNoSchedule)
	add(TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule)
	add(TaintNodePIDPressure, corev1.TaintEffectNoSchedule)
	add(TaintNodeUnschedulable, corev1.TaintEffectNoSchedule)
	if spec.HostNetwork {
		add(TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)
	}
}

// NodeShouldRunDaemonPod reports whether ds wants a pod on node
// (shouldRun) and whether a pod of ds already there may stay
// (shouldContinueRunning), by the daemon predicates: the template's
// nodeName if set, its nodeSelector and required node affinity, and the
// node's NoSchedule and NoExecute taints against the template's
// tolerations plus the default daemon tolerations. A node whose only
// untolerated taints are NoSchedule keeps the pods it runs. Readiness and
// spec.unschedulable do not matter: daemon pods tolerate both.
func NodeShouldRunDaemonPod(node *corev1.Node, ds *appsv1.DaemonSet) (shouldRun, shouldContinueRunning bool) {
	if n := ds.Spec.Template.Spec.NodeName; n != "" && n != node.Name {
		return false, false
	}
	spec := ds.Spec.Template.Spec.DeepCopy()
	addDaemonTolerations(spec)
	if !nodefit.MatchesNodeSelector(spec, node) {
		return false, false
	}
	if nodefit.UntoleratedTaint(node.Spec.Taints, spec.Tolerations, nodefit.ScheduleBlocking) != nil {
		return false, nodefit.UntoleratedTaint(node.Spec.Taints, spec.Tolerations, nodefit.Evicting) == nil
	}
	return true, true
}

// withNodeAffinity returns affinity with its required node selector
// replaced by one term that matches the node named nodeName by
// metadata.name: the pod the DaemonSet creates for that node can be bound
// there only. The rest of affinity is kept; the DaemonSet checked the
// node against the replaced selector already.
func withNodeAffinity(affinity *corev1.Affinity, nodeName string) *corev1.Affinity {
	sel := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchFields: []corev1.NodeSelectorRequirement{{
			Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{nodeName},
		}},
	}}}
	if affinity == nil {
		affinity = &corev1.Affinity{}
	}
	if affinity.NodeAffinity == nil {
		affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = sel
	return affinity
}

// targetNodeName returns the node a daemon pod is for: its spec.nodeName
// once bound, else the one node its required affinity names by
// metadata.name.
func targetNodeName(pod *corev1.Pod) (string, error) {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName, nil
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return "", fmt.Errorf("no node name found for pod %s/%s", pod.Namespace, pod.Name)
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, r := range term.MatchFields {
			if r.Key == metav1.ObjectNameField && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
				return r.Values[0], nil
			}
		}
	}
	return "", fmt.Errorf("no node name found for pod %s/%s", pod.Namespace, pod.Name)
}

// templateGeneration is the DaemonSet's template generation, from the
// annotation the API server keeps; nil when it is missing.
func templateGeneration(ds *appsv1.DaemonSet) (*int64, error) {
	v, ok := ds.Annotations[appsv1.DeprecatedTemplateGeneration]
	if !ok {
		return nil, nil
	}
	gen, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("parse template generation %q: %w", v, err)
	}
	return &gen, nil
}

// podTemplate is ds's pod template as its pods get it: the default daemon
// tolerations, the pod-template-generation label when the generation is
// known and the controller-revision-hash label when hash is set.
func podTemplate(ds *appsv1.DaemonSet, generation *int64, hash string) *corev1.PodTemplateSpec {
	t := ds.Spec.Template.DeepCopy()
	addDaemonTolerations(&t.Spec)
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	if generation != nil {
		t.Labels[TemplateGenerationLabel] = strconv.FormatInt(*generation, 10)
	}
	if hash != "" {
		t.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] = hash
	}
	return t
}

// isPodUpdated reports whether pod runs ds's current template: its
// controller-revision-hash is hash, or its pod-template-generation is the
// DaemonSet's.
func isPodUpdated(pod *corev1.Pod, hash string, generation *int64) bool {
	if generation != nil && pod.Labels[TemplateGenerationLabel] == strconv.FormatInt(*generation, 10) {
		return true
	}
	return hash != "" && pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == hash
}
