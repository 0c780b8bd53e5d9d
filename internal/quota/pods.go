package quota

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
)

// Prefixes of the resource names a quota tracks.
const (
	// CountPrefix starts the object count names, count/<resource>[.<group>].
	CountPrefix    = "count/"
	requestsPrefix = "requests."
	limitsPrefix   = "limits."
	hugePagesPfx   = corev1.ResourceHugePagesPrefix
)

// ObjectCountName is the quota name of the number of objects of gr:
// count/<resource> for the core group, count/<resource>.<group> otherwise.
func ObjectCountName(gr schema.GroupResource) corev1.ResourceName {
	if gr.Group == "" {
		return corev1.ResourceName(CountPrefix + gr.Resource)
	}
	return corev1.ResourceName(CountPrefix + gr.Resource + "." + gr.Group)
}

// PodCharged reports whether pod is charged to quotas at now: it has not
// finished, and is not stuck terminating past its grace period (a lost
// node must not keep a namespace from running replacements).
func PodCharged(pod *corev1.Pod, now time.Time) bool {
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

// PodUsage is what one charged pod uses, under every name a quota may
// give it: pods and count/pods, requests.<r> (and the bare name for cpu,
// memory, ephemeral-storage and huge pages), limits.<r>.
func PodUsage(pod *corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{
		corev1.ResourcePods:               *resource.NewQuantity(1, resource.DecimalSI),
		CountPrefix + corev1.ResourcePods: *resource.NewQuantity(1, resource.DecimalSI),
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
		AddTo(requests, name, q)
		if _, ok := limits[name]; ok {
			AddTo(limits, name, q)
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
			AddTo(sum, name, q)
		}
	}
	sidecars := corev1.ResourceList{}
	peak := corev1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		need := of(c)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			for name, q := range need {
				AddTo(sidecars, name, q)
			}
			need = sidecars
		} else {
			running := sidecars.DeepCopy()
			for name, q := range need {
				AddTo(running, name, q)
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
		AddTo(sum, name, q)
	}
	for name, q := range peak {
		if cur, ok := sum[name]; !ok || q.Cmp(cur) > 0 {
			sum[name] = q
		}
	}
	return sum
}

// AddTo adds q to l[name].
func AddTo(l corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
	cur := l[name]
	cur.Add(q)
	l[name] = cur
}

// IsBestEffort reports whether pod has no cpu or memory request or limit
// in any container: the BestEffort QoS class.
func IsBestEffort(pod *corev1.Pod) bool {
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

// ScopesOf is every scope of q as a requirement: spec.scopes as Exists,
// then scopeSelector's expressions.
func ScopesOf(q *corev1.ResourceQuota) []corev1.ScopedResourceSelectorRequirement {
	var out []corev1.ScopedResourceSelectorRequirement
	for _, s := range q.Spec.Scopes {
		out = append(out, corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists})
	}
	if q.Spec.ScopeSelector != nil {
		out = append(out, q.Spec.ScopeSelector.MatchExpressions...)
	}
	return out
}

// PodMatchesScope reports whether pod falls under one scope requirement.
// An unknown scope matches nothing.
func PodMatchesScope(pod *corev1.Pod, s corev1.ScopedResourceSelectorRequirement) bool {
	switch s.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return IsTerminating(pod)
	case corev1.ResourceQuotaScopeNotTerminating:
		return !IsTerminating(pod)
	case corev1.ResourceQuotaScopeBestEffort:
		return IsBestEffort(pod)
	case corev1.ResourceQuotaScopeNotBestEffort:
		return !IsBestEffort(pod)
	case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return usesCrossNamespaceAffinity(pod)
	case corev1.ResourceQuotaScopePriorityClass:
		// The requirement reads the priority class name as the value of a
		// label that only pods naming a class have.
		var op selection.Operator
		switch s.Operator {
		case corev1.ScopeSelectorOpIn:
			op = selection.In
		case corev1.ScopeSelectorOpNotIn:
			op = selection.NotIn
		case corev1.ScopeSelectorOpExists:
			return pod.Spec.PriorityClassName != ""
		case corev1.ScopeSelectorOpDoesNotExist:
			op = selection.DoesNotExist
		default:
			return false
		}
		req, err := labels.NewRequirement(string(corev1.ResourceQuotaScopePriorityClass), op, s.Values)
		if err != nil {
			return false
		}
		set := labels.Set{}
		if pod.Spec.PriorityClassName != "" {
			set[string(corev1.ResourceQuotaScopePriorityClass)] = pod.Spec.PriorityClassName
		}
		return req.Matches(set)
	}
	return false
}

// IsTerminating reports whether pod has an active deadline: the
// Terminating scope.
func IsTerminating(pod *corev1.Pod) bool {
	return pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds >= 0
}

// PodMatchesScopes reports whether pod falls under every scope
// requirement (all of them when scopes is empty).
func PodMatchesScopes(pod *corev1.Pod, scopes []corev1.ScopedResourceSelectorRequirement) bool {
	for _, sc := range scopes {
		if !PodMatchesScope(pod, sc) {
			return false
		}
	}
	return true
}

// podNames are the names a quota charges pods under, besides huge pages
// and extended resources.
var podNames = []corev1.ResourceName{
	CountPrefix + corev1.ResourcePods,
	corev1.ResourcePods,
	corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsEphemeralStorage,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage,
}

// IsPodName reports whether a quota tracking name charges pods for it:
// pods, count/pods, cpu, memory and ephemeral-storage (bare, requests.
// and limits.), huge pages (bare and requests.) and requests.<extended
// resource>.
func IsPodName(name corev1.ResourceName) bool {
	if slices.Contains(podNames, name) {
		return true
	}
	s := string(name)
	if strings.HasPrefix(s, hugePagesPfx) || strings.HasPrefix(s, requestsPrefix+hugePagesPfx) {
		return true
	}
	// An extended resource: requests.<domain>/<name>, outside kubernetes.io.
	return strings.HasPrefix(s, requestsPrefix) && strings.Contains(s, "/") && !strings.Contains(s, "kubernetes.io/")
}

// constrained are the names a quota may only track if every container
// states them: a requirement Kubernetes keeps for compatibility, for cpu
// and memory alone.
var constrained = []corev1.ResourceName{
	corev1.ResourceCPU, corev1.ResourceMemory,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory,
}

// PodConstraints checks that every container and init container of pod
// states what tracked asks of it: a quota tracking cpu, memory or their
// requests. forms needs a request in each, limits.cpu or limits.memory a
// limit. The error is Kubernetes' "must specify <name> for: <containers>"
// list, sorted.
func PodConstraints(tracked []corev1.ResourceName, pod *corev1.Pod) error {
	if podLevelResourcesSet(pod) {
		// Pod-level resources make the containers' optional.
		return nil
	}
	var required []corev1.ResourceName
	for _, n := range tracked {
		if slices.Contains(constrained, n) && !slices.Contains(required, n) {
			required = append(required, n)
		}
	}
	if len(required) == 0 {
		return nil
	}
	missing := map[corev1.ResourceName][]string{}
	check := func(c *corev1.Container) {
		for _, n := range required {
			if !containerStates(c, n) && !slices.Contains(missing[n], c.Name) {
				missing[n] = append(missing[n], c.Name)
			}
		}
	}
	for i := range pod.Spec.Containers {
		check(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.InitContainers {
		check(&pod.Spec.InitContainers[i])
	}
	if len(missing) == 0 {
		return nil
	}
	names := make([]string, 0, len(missing))
	for n := range missing {
		names = append(names, string(n))
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		cs := missing[corev1.ResourceName(n)]
		sort.Strings(cs)
		parts = append(parts, fmt.Sprintf("%s for: %s", n, strings.Join(cs, ",")))
	}
	return fmt.Errorf("must specify %s", strings.Join(parts, "; "))
}

// containerStates reports whether c states what the quota name n needs:
// a request (a limit alone stands for it, as the API defaults it) for the
// bare and requests. forms, a limit for the limits. form.
func containerStates(c *corev1.Container, n corev1.ResourceName) bool {
	switch n {
	case corev1.ResourceLimitsCPU:
		_, ok := c.Resources.Limits[corev1.ResourceCPU]
		return ok
	case corev1.ResourceLimitsMemory:
		_, ok := c.Resources.Limits[corev1.ResourceMemory]
		return ok
	}
	base := corev1.ResourceName(strings.TrimPrefix(string(n), requestsPrefix))
	if _, ok := c.Resources.Requests[base]; ok {
		return true
	}
	_, ok := c.Resources.Limits[base]
	return ok
}

// podLevelResourcesSet reports whether pod states pod-level requests or
// limits of a resource that can be set there: cpu, memory, huge pages.
func podLevelResourcesSet(pod *corev1.Pod) bool {
	r := pod.Spec.Resources
	if r == nil {
		return false
	}
	for _, l := range []corev1.ResourceList{r.Requests, r.Limits} {
		for name := range l {
			if name == corev1.ResourceCPU || name == corev1.ResourceMemory || strings.HasPrefix(string(name), hugePagesPfx) {
				return true
			}
		}
	}
	return false
}
