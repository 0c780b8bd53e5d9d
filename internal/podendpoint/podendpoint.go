package podendpoint

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ShouldBeEndpoint reports whether pod is to be published as an endpoint:
// it is not terminal, has an IP, and is not terminating unless
// includeTerminating is set.
func ShouldBeEndpoint(pod *corev1.Pod, includeTerminating bool) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if pod.Status.PodIP == "" && len(pod.Status.PodIPs) == 0 {
		return false
	}
	return includeTerminating || pod.DeletionTimestamp == nil
}

// IsPodReady reports whether pod's Ready condition is True.
func IsPodReady(pod *corev1.Pod) bool {
	c := readyCondition(pod)
	return c != nil && c.Status == corev1.ConditionTrue
}

func readyCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// ShouldSetHostname reports whether pod's endpoint for svc carries the
// pod's hostname: the pod has one and its subdomain names svc, in svc's
// namespace.
func ShouldSetHostname(pod *corev1.Pod, svc *corev1.Service) bool {
	return pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name && pod.Namespace == svc.Namespace
}

// IsServiceIPSet reports whether svc has a cluster IP (is not headless).
func IsServiceIPSet(svc *corev1.Service) bool {
	return svc.Spec.ClusterIP != corev1.ClusterIPNone && svc.Spec.ClusterIP != ""
}

// FindPort resolves port's targetPort on pod: a number is taken as it is;
// a name is looked up among the ports of the pod's containers, then of its
// sidecars (init containers that always restart), with port's protocol.
func FindPort(pod *corev1.Pod, port *corev1.ServicePort) (int32, error) {
	switch port.TargetPort.Type {
	case intstr.Int:
		return int32(port.TargetPort.IntValue()), nil
	case intstr.String:
		name := port.TargetPort.StrVal
		for _, c := range pod.Spec.Containers {
			for _, p := range c.Ports {
				if p.Name == name && p.Protocol == port.Protocol {
					return p.ContainerPort, nil
				}
			}
		}
		for _, c := range pod.Spec.InitContainers {
			if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
				continue
			}
			for _, p := range c.Ports {
				if p.Name == name && p.Protocol == port.Protocol {
					return p.ContainerPort, nil
				}
			}
		}
	}
	return 0, fmt.Errorf("pod %s/%s has no port %s/%s", pod.Namespace, pod.Name, port.TargetPort.String(), port.Protocol)
}

// ServiceLister lists the Services of a namespace; a cache.NamespaceLister
// serves it.
type ServiceLister interface {
	List(selector labels.Selector) ([]*corev1.Service, error)
}

// ServicesOf returns the keys ("namespace/name") of the Services in
// services (pod's namespace) whose selector selects pod. Services without
// a selector select nothing.
func ServicesOf(services ServiceLister, pod *corev1.Pod) ([]string, error) {
	all, err := services.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, s := range all {
		if s.Spec.Selector == nil || s.Namespace != pod.Namespace {
			continue
		}
		if labels.SelectorFromValidatedSet(s.Spec.Selector).Matches(labels.Set(pod.Labels)) {
			keys = append(keys, s.Namespace+"/"+s.Name)
		}
	}
	return keys, nil
}

// ServicesToSync returns the keys of the Services an update of a pod from
// old to cur concerns: none when nothing an endpoint shows changed; the
// Services of both states when the labels changed; else those of cur.
func ServicesToSync(services ServiceLister, old, cur *corev1.Pod) ([]string, error) {
	if old.ResourceVersion == cur.ResourceVersion {
		return nil, nil
	}
	labelsChanged := !equality.Semantic.DeepEqual(old.Labels, cur.Labels)
	if !labelsChanged && !endpointChanged(old, cur) {
		return nil, nil
	}
	keys, err := ServicesOf(services, cur)
	if err != nil || !labelsChanged {
		return keys, err
	}
	oldKeys, err := ServicesOf(services, old)
	if err != nil {
		return nil, err
	}
	for _, k := range oldKeys {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// endpointChanged reports whether anything a pod's endpoint is made from
// differs between old and cur.
func endpointChanged(old, cur *corev1.Pod) bool {
	return (old.DeletionTimestamp == nil) != (cur.DeletionTimestamp == nil) ||
		IsPodReady(old) != IsPodReady(cur) ||
		old.Status.Phase != cur.Status.Phase ||
		old.Status.PodIP != cur.Status.PodIP ||
		!equality.Semantic.DeepEqual(old.Status.PodIPs, cur.Status.PodIPs) ||
		old.Spec.NodeName != cur.Spec.NodeName ||
		old.Spec.Hostname != cur.Spec.Hostname ||
		old.Spec.Subdomain != cur.Spec.Subdomain ||
		!equality.Semantic.DeepEqual(containerPorts(old), containerPorts(cur))
}

func containerPorts(pod *corev1.Pod) [][]corev1.ContainerPort {
	var out [][]corev1.ContainerPort
	for _, c := range pod.Spec.Containers {
		out = append(out, c.Ports)
	}
	for _, c := range pod.Spec.InitContainers {
		out = append(out, c.Ports)
	}
	return out
}
