package limitranger

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// validatePod checks the pod against lr's Container and Pod items.
func validatePod(lr *corev1.LimitRange, pod *corev1.Pod) error {
	var errs []error
	for _, item := range lr.Spec.Limits {
		switch item.Type {
		case corev1.LimitTypeContainer:
			for _, containers := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
				for i := range containers {
					r := &containers[i].Resources
					errs = append(errs, checkItem(item, r.Requests, r.Limits)...)
				}
			}
		case corev1.LimitTypePod:
			errs = append(errs, checkItem(item, podRequests(pod), podLimits(pod))...)
		}
	}
	return utilerrors.NewAggregate(errs)
}

// validateClaim checks a claim's storage requests against lr's
// PersistentVolumeClaim items; a claim's limits are not user input.
func validateClaim(lr *corev1.LimitRange, pvc *corev1.PersistentVolumeClaim) error {
	var errs []error
	for _, item := range lr.Spec.Limits {
		if item.Type != corev1.LimitTypePersistentVolumeClaim {
			continue
		}
		t := string(item.Type)
		for _, k := range sortedNames(item.Min) {
			if err := minConstraint(t, string(k), item.Min[k], pvc.Spec.Resources.Requests, nil); err != nil {
				errs = append(errs, err)
			}
		}
		for _, k := range sortedNames(item.Max) {
			if err := maxRequestConstraint(t, string(k), item.Max[k], pvc.Spec.Resources.Requests); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return utilerrors.NewAggregate(errs)
}

// checkItem applies an item's min, max and maxLimitRequestRatio to one set
// of requests and limits, resources in name order.
func checkItem(item corev1.LimitRangeItem, requests, limits corev1.ResourceList) []error {
	var errs []error
	t := string(item.Type)
	for _, k := range sortedNames(item.Min) {
		if err := minConstraint(t, string(k), item.Min[k], requests, limits); err != nil {
			errs = append(errs, err)
		}
	}
	for _, k := range sortedNames(item.Max) {
		if err := maxConstraint(t, string(k), item.Max[k], requests, limits); err != nil {
			errs = append(errs, err)
		}
	}
	for _, k := range sortedNames(item.MaxLimitRequestRatio) {
		if err := ratioConstraint(t, string(k), item.MaxLimitRequestRatio[k], requests, limits); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func sortedNames(l corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(l))
	for k := range l {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// atOnePrecision returns request, limit and enforced at one precision: milli
// units unless one of them would overflow there, then units.
func atOnePrecision(request, limit, enforced resource.Quantity) (int64, int64, int64) {
	r, l, e := request.Value(), limit.Value(), enforced.Value()
	if r <= resource.MaxMilliValue && l <= resource.MaxMilliValue && e <= resource.MaxMilliValue {
		return request.MilliValue(), limit.MilliValue(), enforced.MilliValue()
	}
	return r, l, e
}

func minConstraint(limitType, name string, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[corev1.ResourceName(name)]
	lim, hasLim := limits[corev1.ResourceName(name)]
	r, l, e := atOnePrecision(req, lim, enforced)
	switch {
	case !hasReq:
		return fmt.Errorf("minimum %s usage per %s is %s.  No request is specified", name, limitType, enforced.String())
	case r < e:
		return fmt.Errorf("minimum %s usage per %s is %s, but request is %s", name, limitType, enforced.String(), req.String())
	case hasLim && l < e:
		return fmt.Errorf("minimum %s usage per %s is %s, but limit is %s", name, limitType, enforced.String(), lim.String())
	}
	return nil
}

// maxRequestConstraint is the max of an object without limits (a claim).
func maxRequestConstraint(limitType, name string, enforced resource.Quantity, requests corev1.ResourceList) error {
	req, hasReq := requests[corev1.ResourceName(name)]
	r, _, e := atOnePrecision(req, resource.Quantity{}, enforced)
	switch {
	case !hasReq:
		return fmt.Errorf("maximum %s usage per %s is %s.  No request is specified", name, limitType, enforced.String())
	case r > e:
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, limitType, enforced.String(), req.String())
	}
	return nil
}

func maxConstraint(limitType, name string, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[corev1.ResourceName(name)]
	lim, hasLim := limits[corev1.ResourceName(name)]
	r, l, e := atOnePrecision(req, lim, enforced)
	switch {
	case !hasLim:
		return fmt.Errorf("maximum %s usage per %s is %s.  No limit is specified", name, limitType, enforced.String())
	case l > e:
		return fmt.Errorf("maximum %s usage per %s is %s, but limit is %s", name, limitType, enforced.String(), lim.String())
	case hasReq && r > e:
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, limitType, enforced.String(), req.String())
	}
	return nil
}

func ratioConstraint(limitType, name string, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[corev1.ResourceName(name)]
	lim, hasLim := limits[corev1.ResourceName(name)]
	r, l, _ := atOnePrecision(req, lim, enforced)
	if !hasReq || r == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0", name, limitType, enforced.String())
	}
	if !hasLim || l == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no limit is specified or limit is 0", name, limitType, enforced.String())
	}
	ratio := float64(l) / float64(r)
	shown := ratio
	allowed := float64(enforced.Value())
	if enforced.Value() <= resource.MaxMilliValue {
		ratio *= 1000
		allowed = float64(enforced.MilliValue())
	}
	if ratio > allowed {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but provided ratio is %f", name, limitType, enforced.String(), shown)
	}
	return nil
}

// podLevel reports whether name may be set at the pod level, overriding
// the containers' sum.
func podLevel(name corev1.ResourceName) bool {
	return name == corev1.ResourceCPU || name == corev1.ResourceMemory
}

// podRequests returns the pod's effective requests: the sum of its
// containers and restartable init containers, at least what any other init
// container needs beside the restartable ones started before it, and the
// pod-level requests where given.
func podRequests(pod *corev1.Pod) corev1.ResourceList {
	return podTotal(pod, func(r *corev1.ResourceRequirements) corev1.ResourceList { return r.Requests })
}

// podLimits is podRequests for limits.
func podLimits(pod *corev1.Pod) corev1.ResourceList {
	return podTotal(pod, func(r *corev1.ResourceRequirements) corev1.ResourceList { return r.Limits })
}

func podTotal(pod *corev1.Pod, of func(*corev1.ResourceRequirements) corev1.ResourceList) corev1.ResourceList {
	total := corev1.ResourceList{}
	for i := range pod.Spec.Containers {
		add(total, of(&pod.Spec.Containers[i].Resources))
	}
	sidecars, initMax := corev1.ResourceList{}, corev1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		own := of(&c.Resources)
		var need corev1.ResourceList
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(total, own)
			add(sidecars, own)
			need = sidecars
		} else {
			need = corev1.ResourceList{}
			add(need, own)
			add(need, sidecars)
		}
		maxOf(initMax, need)
	}
	maxOf(total, initMax)
	if pod.Spec.Resources != nil {
		for k, v := range of(pod.Spec.Resources) {
			if podLevel(k) {
				total[k] = v.DeepCopy()
			}
		}
	}
	return total
}

func add(list, more corev1.ResourceList) {
	for k, v := range more {
		if cur, ok := list[k]; ok {
			cur.Add(v)
			list[k] = cur
		} else {
			list[k] = v.DeepCopy()
		}
	}
}

func maxOf(list, other corev1.ResourceList) {
	for k, v := range other {
		if cur, ok := list[k]; !ok || v.Cmp(cur) > 0 {
			list[k] = v.DeepCopy()
		}
	}
}
