package resourcequota

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// Resource names a quota counts that are not corev1 constants.
const (
	countPrefix    = "count/"
	requestsPrefix = "requests."
	limitsPrefix   = "limits."
	hugePagesPfx   = corev1.ResourceHugePagesPrefix
)

// podCounts reports whether pod is charged to quotas at now: it has not
// finished, and is not stuck terminating past its grace period (a lost
// node must not keep a namespace from running replacements).
func podCounts(pod *corev1.Pod, now time.Time) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil {
		end := pod.DeletionTimestamp.Add(time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second)
		if now.After(end) {
			return false
		}
	}
	return true
}

// podUsage is what one charged pod uses, under every name a quota may
// give it: pods and count/pods, requests.<r> (and the bare name for cpu,
// memory, ephemeral-storage and huge pages), limits.<r>.
func podUsage(pod *corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{
		corev1.ResourcePods:               *resource.NewQuantity(1, resource.DecimalSI),
		countPrefix + corev1.ResourcePods: *resource.NewQuantity(1, resource.DecimalSI),
	}
	requests, limits := podResources(pod)
	for name, q := range requests {
		if !isQuotaComputeResource(name) {
			continue
		}
		out[corev1.ResourceName(requestsPrefix+string(name))] = q
		if name == corev1.ResourceCPU || name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage || strings.HasPrefix(string(name), hugePagesPfx) {
			out[name] = q
		}
	}
	for name, q := range limits {
		if isQuotaComputeResource(name) && !strings.HasPrefix(string(name), hugePagesPfx) {
			out[corev1.ResourceName(limitsPrefix+string(name))] = q
		}
	}
	return out
}

// isQuotaComputeResource reports whether name is a compute resource a
// quota tracks per pod: the standard ones, huge pages and extended
// resources (a domain-qualified name).
func isQuotaComputeResource(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		return true
	}
	s := string(name)
	return strings.HasPrefix(s, hugePagesPfx) || (strings.Contains(s, "/") && !strings.HasPrefix(s, "kubernetes.io/"))
}

// podResources is the effective requests and limits of pod: the pod-level
// resources where set, else the larger of the containers' sum (with the
// sidecars) and each init container's need while it runs, plus overhead.
// A container limit without a request counts as the request, as the API
// defaults it.
func podResources(pod *corev1.Pod) (requests, limits corev1.ResourceList) {
	requests = containersNeed(pod, func(c *corev1.Container) corev1.ResourceList {
		r := c.Resources.Requests.DeepCopy()
		if r == nil {
			r = corev1.ResourceList{}
		}
		for name, q := range c.Resources.Limits {
			if _, ok := r[name]; !ok {
				r[name] = q
			}
		}
		return r
	})
	limits = containersNeed(pod, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Limits })
	if pr := pod.Spec.Resources; pr != nil {
		for name, q := range pr.Requests {
			requests[name] = q
		}
		for name, q := range pr.Limits {
			limits[name] = q
			if _, ok := pr.Requests[name]; !ok {
				if _, ok := requests[name]; !ok {
					requests[name] = q
				}
			}
		}
	}
	for name, q := range pod.Spec.Overhead {
		addTo(requests, name, q)
		if _, ok := limits[name]; ok {
			addTo(limits, name, q)
		}
	}
	return requests, limits
}

// containersNeed combines of(container) over pod's containers: the sum of
// the app containers and sidecars, or an init container's need plus the
// sidecars started before it, whichever is larger, per resource.
func containersNeed(pod *corev1.Pod, of func(*corev1.Container) corev1.ResourceList) corev1.ResourceList {
	sum := corev1.ResourceList{}
	for i := range pod.Spec.Containers {
		for name, q := range of(&pod.Spec.Containers[i]) {
			addTo(sum, name, q)
		}
	}
	sidecars := corev1.ResourceList{}
	peak := corev1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		need := of(c)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			for name, q := range need {
				addTo(sidecars, name, q)
			}
			need = sidecars
		} else {
			running := sidecars.DeepCopy()
			for name, q := range need {
				addTo(running, name, q)
			}
			need = running
		}
		for name, q := range need {
			if cur, ok := peak[name]; !ok || q.Cmp(cur) > 0 {
				peak[name] = q.DeepCopy()
			}
		}
	}
	for name, q := range sidecars {
		addTo(sum, name, q)
	}
	for name, q := range peak {
		if cur, ok := sum[name]; !ok || q.Cmp(cur) > 0 {
			sum[name] = q
		}
	}
	return sum
}

func addTo(l corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
	cur := l[name]
	cur.Add(q)
	l[name] = cur
}

// isBestEffort reports whether pod has no cpu or memory request or limit
// in any container: the BestEffort QoS class.
func isBestEffort(pod *corev1.Pod) bool {
	check := func(cs []corev1.Container) bool {
		for _, c := range cs {
			for _, l := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
				for name := range l {
					if name == corev1.ResourceCPU || name == corev1.ResourceMemory {
						return false
					}
				}
			}
		}
		return true
	}
	if pr := pod.Spec.Resources; pr != nil {
		for _, l := range []corev1.ResourceList{pr.Requests, pr.Limits} {
			for name := range l {
				if name == corev1.ResourceCPU || name == corev1.ResourceMemory {
					return false
				}
			}
		}
	}
	return check(pod.Spec.Containers) && check(pod.Spec.InitContainers)
}

// usesCrossNamespaceAffinity reports whether a pod affinity or
// anti-affinity term of pod names other namespaces.
func usesCrossNamespaceAffinity(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	if a == nil {
		return false
	}
	cross := func(t *corev1.PodAffinityTerm) bool { return len(t.Namespaces) > 0 || t.NamespaceSelector != nil }
	var terms []*corev1.PodAffinityTerm
	if a.PodAffinity != nil {
		for i := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, &a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i])
		}
		for i := range a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, &a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution[i].PodAffinityTerm)
		}
	}
	if a.PodAntiAffinity != nil {
		for i := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, &a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i])
		}
		for i := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, &a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[i].PodAffinityTerm)
		}
	}
	for _, t := range terms {
		if cross(t) {
			return true
		}
	}
	return false
}

// scopesOf is every scope of q as a requirement: spec.scopes as Exists,
// then scopeSelector's expressions.
func scopesOf(q *corev1.ResourceQuota) []corev1.ScopedResourceSelectorRequirement {
	var out []corev1.ScopedResourceSelectorRequirement
	for _, s := range q.Spec.Scopes {
		out = append(out, corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists})
	}
	if q.Spec.ScopeSelector != nil {
		out = append(out, q.Spec.ScopeSelector.MatchExpressions...)
	}
	return out
}

// podMatchesScope reports whether pod falls under one scope requirement.
// An unknown scope matches nothing.
func podMatchesScope(pod *corev1.Pod, s corev1.ScopedResourceSelectorRequirement) bool {
	switch s.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return isTerminating(pod)
	case corev1.ResourceQuotaScopeNotTerminating:
		return !isTerminating(pod)
	case corev1.ResourceQuotaScopeBestEffort:
		return isBestEffort(pod)
	case corev1.ResourceQuotaScopeNotBestEffort:
		return !isBestEffort(pod)
	case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return usesCrossNamespaceAffinity(pod)
	case corev1.ResourceQuotaScopePriorityClass:
		// The requirement reads the priority class name as the value of a
		// label that every pod has (empty when it names none).
		var op selection.Operator
		switch s.Operator {
		case corev1.ScopeSelectorOpIn:
			op = selection.In
		case corev1.ScopeSelectorOpNotIn:
			op = selection.NotIn
		case corev1.ScopeSelectorOpExists:
			op = selection.Exists
		case corev1.ScopeSelectorOpDoesNotExist:
			op = selection.DoesNotExist
		default:
			return false
		}
		req, err := labels.NewRequirement("priorityclass", op, s.Values)
		if err != nil {
			return false
		}
		return req.Matches(labels.Set{"priorityclass": pod.Spec.PriorityClassName})
	}
	return false
}

// isTerminating reports whether pod has an active deadline: the
// Terminating scope.
func isTerminating(pod *corev1.Pod) bool {
	return pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds >= 0
}
