package nodefit

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// PodRequests returns the resources a pod holds on its node, as the
// scheduler counts them: the sum of its containers' requests and its
// restartable (sidecar) init containers', or, when larger for a
// resource, what an ordinary init container needs while it runs next to
// the sidecars started before it; plus the pod's overhead. Every pod also
// takes one "pods".
func PodRequests(spec *corev1.PodSpec) corev1.ResourceList {
	total := corev1.ResourceList{}
	for i := range spec.Containers {
		add(total, spec.Containers[i].Resources.Requests)
	}
	sidecars := corev1.ResourceList{}
	initMax := corev1.ResourceList{}
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(sidecars, c.Resources.Requests)
			add(total, c.Resources.Requests)
			continue
		}
		running := sidecars.DeepCopy()
		add(running, c.Resources.Requests)
		maxInto(initMax, running)
	}
	maxInto(total, initMax)
	add(total, spec.Overhead)
	total[corev1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)
	return total
}

// Insufficient returns the resources among requested that do not fit in
// allocatable once used is taken: "pods" first, then cpu, memory and
// ephemeral-storage, then the others in no set order. A resource the pod
// does not request (or requests zero of) always fits.
func Insufficient(requested, used, allocatable corev1.ResourceList) []corev1.ResourceName {
	var out []corev1.ResourceName
	check := func(name corev1.ResourceName) {
		want, ok := requested[name]
		if !ok || want.IsZero() {
			return
		}
		have := allocatable[name]
		free := have.DeepCopy()
		if u, ok := used[name]; ok {
			free.Sub(u)
		}
		if want.Cmp(free) > 0 {
			out = append(out, name)
		}
	}
	first := []corev1.ResourceName{corev1.ResourcePods, corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage}
	for _, n := range first {
		check(n)
	}
	for n := range requested {
		switch n {
		case corev1.ResourcePods, corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		default:
			check(n)
		}
	}
	return out
}

// Add adds every quantity of more into into.
func Add(into, more corev1.ResourceList) { add(into, more) }

// Sub takes every quantity of less from from.
func Sub(from, less corev1.ResourceList) {
	for n, q := range less {
		v := from[n]
		v.Sub(q)
		from[n] = v
	}
}

func add(into, more corev1.ResourceList) {
	for n, q := range more {
		v := into[n]
		v.Add(q)
		into[n] = v
	}
}

func maxInto(into, other corev1.ResourceList) {
	for n, q := range other {
		if v, ok := into[n]; !ok || q.Cmp(v) > 0 {
			into[n] = q.DeepCopy()
		}
	}
}
