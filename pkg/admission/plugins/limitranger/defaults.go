package limitranger

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// applyDefaults gives the pod's containers and init containers the
// defaults of lr's Container items they lack, and records what was set in
// the pod's Annotation.
func applyDefaults(lr *corev1.LimitRange, pod *corev1.Pod) {
	requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
	for _, item := range lr.Spec.Limits {
		if item.Type != corev1.LimitTypeContainer {
			continue
		}
		for k, v := range item.DefaultRequest {
			requests[k] = v.DeepCopy()
		}
		for k, v := range item.Default {
			limits[k] = v.DeepCopy()
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return
	}
	var notes []string
	for i := range pod.Spec.Containers {
		notes = mergeDefaults(&pod.Spec.Containers[i], "container", requests, limits, notes)
	}
	for i := range pod.Spec.InitContainers {
		notes = mergeDefaults(&pod.Spec.InitContainers[i], "init container", requests, limits, notes)
	}
	if len(notes) == 0 {
		return
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[Annotation] = "LimitRanger plugin set: " + strings.Join(notes, "; ")
}

// mergeDefaults sets the requests and limits c lacks and appends to notes
// what it set.
func mergeDefaults(c *corev1.Container, what string, requests, limits corev1.ResourceList, notes []string) []string {
	var setRequests, setLimits []string
	for k, v := range limits {
		if _, ok := c.Resources.Limits[k]; ok {
			continue
		}
		if c.Resources.Limits == nil {
			c.Resources.Limits = corev1.ResourceList{}
		}
		c.Resources.Limits[k] = v.DeepCopy()
		setLimits = append(setLimits, string(k))
	}
	for k, v := range requests {
		if _, ok := c.Resources.Requests[k]; ok {
			continue
		}
		if c.Resources.Requests == nil {
			c.Resources.Requests = corev1.ResourceList{}
		}
		c.Resources.Requests[k] = v.DeepCopy()
		setRequests = append(setRequests, string(k))
	}
	if len(setRequests) > 0 {
		sort.Strings(setRequests)
		notes = append(notes, fmt.Sprintf("%s request for %s %s", strings.Join(setRequests, ", "), what, c.Name))
	}
	if len(setLimits) > 0 {
		sort.Strings(setLimits)
		notes = append(notes, fmt.Sprintf("%s limit for %s %s", strings.Join(setLimits, ", "), what, c.Name))
	}
	return notes
}
