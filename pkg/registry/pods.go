package registry

import (
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Pods is core/v1 pods: status subresource, spec mostly immutable, graceful
// deletion once bound to a node.
func Pods() Strategy {
	return &Resource[*corev1.Pod]{
		Meta: Info{
			GVK:      corev1.SchemeGroupVersion.WithKind("Pod"),
			Resource: "pods", Singular: "pod", ShortNames: []string{"po"}, Categories: []string{"all"},
			Namespaced: true, Status: true, ReturnDeletedObject: true,
		},
		NewFunc:        func() *corev1.Pod { return &corev1.Pod{} },
		NewListFunc:    func() runtime.Object { return &corev1.PodList{} },
		Spec:           func(p *corev1.Pod) any { return p.Spec },
		CopyStatus:     func(dst, src *corev1.Pod) { dst.Status = src.Status },
		ResetForStatus: resetPodForStatus,
		ResetStatus: func(p *corev1.Pod) {
			p.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: qosClass(&p.Spec)}
		},
		Defaults: func(p *corev1.Pod) {
			defaultPodSpec(&p.Spec)
			defaultRequestsFromLimits(&p.Spec)
			// Pods only, not pod templates, as in Kubernetes.
			if p.Spec.EnableServiceLinks == nil {
				t := corev1.DefaultEnableServiceLinks
				p.Spec.EnableServiceLinks = &t
			}
		},
		ValidateFunc: func(p *corev1.Pod) field.ErrorList { return validatePodSpec(&p.Spec, field.NewPath("spec")) },
		ValidateUpdateFunc: func(p, old *corev1.Pod) field.ErrorList {
			// Only images, activeDeadlineSeconds, tolerations additions and a
			// first binding may change in a running pod's spec.
			a, b := p.Spec.DeepCopy(), old.Spec.DeepCopy()
			for i := range a.Containers {
				if i < len(b.Containers) {
					a.Containers[i].Image = b.Containers[i].Image
				}
			}
			for i := range a.InitContainers {
				if i < len(b.InitContainers) {
					a.InitContainers[i].Image = b.InitContainers[i].Image
				}
			}
			a.ActiveDeadlineSeconds = b.ActiveDeadlineSeconds
			a.Tolerations = b.Tolerations
			if b.NodeName == "" {
				a.NodeName = ""
			}
			if !apiequality.Semantic.DeepEqual(a, b) {
				return field.ErrorList{field.Forbidden(field.NewPath("spec"), "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations)")}
			}
			return nil
		},
		Fields: func(p *corev1.Pod) fields.Set {
			hostNetwork := "false"
			if p.Spec.HostNetwork {
				hostNetwork = "true"
			}
			return fields.Set{
				"spec.nodeName":            p.Spec.NodeName,
				"spec.restartPolicy":       string(p.Spec.RestartPolicy),
				"spec.schedulerName":       p.Spec.SchedulerName,
				"spec.serviceAccountName":  p.Spec.ServiceAccountName,
				"spec.hostNetwork":         hostNetwork,
				"status.phase":             string(p.Status.Phase),
				"status.podIP":             p.Status.PodIP,
				"status.nominatedNodeName": p.Status.NominatedNodeName,
			}
		},
		Graceful: func(p *corev1.Pod, requested *int64) (bool, int64) {
			grace := defaultTerminationGracePeriod
			if p.Spec.TerminationGracePeriodSeconds != nil {
				grace = *p.Spec.TerminationGracePeriodSeconds
			}
			if requested != nil {
				grace = *requested
			}
			// An unbound or finished pod has nothing running to stop.
			if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				return false, 0
			}
			return grace > 0, grace
		},
	}
}

// qosClass computes a pod's quality of service class from its resources.
func qosClass(spec *corev1.PodSpec) corev1.PodQOSClass {
	any, guaranteed := false, true
	for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, hasReq := c.Resources.Requests[name]
			lim, hasLim := c.Resources.Limits[name]
			if hasReq && !req.IsZero() || hasLim && !lim.IsZero() {
				any = true
			}
			if !hasLim || hasReq && req.Cmp(lim) != 0 {
				guaranteed = false
			}
		}
	}
	switch {
	case !any:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	default:
		return corev1.PodQOSBurstable
	}
}

// resetPodForStatus keeps what a pods/status write may not change: the spec
// and the owner references (garbage collection relies on them). A status
// that leaves out the QoS class or an observed generation keeps the stored
// one: the QoS class is fixed at create and older agents drop these fields.
func resetPodForStatus(p, old *corev1.Pod) {
	p.Spec = old.Spec
	p.OwnerReferences = old.OwnerReferences
	if p.Status.QOSClass == "" {
		p.Status.QOSClass = old.Status.QOSClass
	}
	if p.Status.ObservedGeneration == 0 {
		p.Status.ObservedGeneration = old.Status.ObservedGeneration
	}
	// Conditions are matched by type, in order, as several may share a type.
	gens := map[corev1.PodConditionType][]int64{}
	for _, c := range old.Status.Conditions {
		gens[c.Type] = append(gens[c.Type], c.ObservedGeneration)
	}
	for i, c := range p.Status.Conditions {
		var g int64
		if q := gens[c.Type]; len(q) > 0 {
			g, gens[c.Type] = q[0], q[1:]
		}
		if c.ObservedGeneration == 0 {
			p.Status.Conditions[i].ObservedGeneration = g
		}
	}
}
