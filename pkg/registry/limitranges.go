package registry

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// LimitRanges is core/v1 limitranges: per-namespace bounds and defaults of
// the resources of pods, containers and claims.
func LimitRanges() Strategy {
	return &Resource[*corev1.LimitRange]{
		Meta: Info{
			GVK:      corev1.SchemeGroupVersion.WithKind("LimitRange"),
			Resource: "limitranges", Singular: "limitrange", ShortNames: []string{"limits"},
			Namespaced: true,
		},
		NewFunc:     func() *corev1.LimitRange { return &corev1.LimitRange{} },
		NewListFunc: func() runtime.Object { return &corev1.LimitRangeList{} },
		Defaults: func(l *corev1.LimitRange) {
			// A container's default limit is the max, its default
			// request the default limit, or else the min.
			for i := range l.Spec.Limits {
				item := &l.Spec.Limits[i]
				if item.Type != corev1.LimitTypeContainer {
					continue
				}
				if item.Default == nil {
					item.Default = corev1.ResourceList{}
				}
				if item.DefaultRequest == nil {
					item.DefaultRequest = corev1.ResourceList{}
				}
				fill := func(dst, src corev1.ResourceList) {
					for k, v := range src {
						if _, ok := dst[k]; !ok {
							dst[k] = v.DeepCopy()
						}
					}
				}
				fill(item.Default, item.Max)
				fill(item.DefaultRequest, item.Default)
				fill(item.DefaultRequest, item.Min)
			}
		},
		ValidateFunc: validateLimitRange,
	}
}

var (
	limitTypes = sets.New(corev1.LimitTypePod, corev1.LimitTypeContainer, corev1.LimitTypePersistentVolumeClaim)
	// containerResources are the unprefixed resources of containers.
	containerResources = sets.New[corev1.ResourceName](corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage)
)

// isStandardResource reports whether an unprefixed name is a resource
// Kubernetes knows.
func isStandardResource(name corev1.ResourceName) bool {
	return quotaStandardResources.Has(name) || otherStandardResources.Has(name) ||
		strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// validateResourceName checks a resource name: qualified, and standard
// unless it is prefixed.
func validateResourceName(name corev1.ResourceName, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(string(name)) {
		errs = append(errs, field.Invalid(fld, name, msg))
	}
	if len(errs) == 0 && !strings.Contains(string(name), "/") && !isStandardResource(name) {
		errs = append(errs, field.Invalid(fld, name, "must be a standard resource type or fully qualified"))
	}
	return errs
}

// validateLimitResourceName checks a resource a limit range bounds: those
// of pods and containers are container resources.
func validateLimitResourceName(t corev1.LimitType, name corev1.ResourceName, fld *field.Path) field.ErrorList {
	errs := validateResourceName(name, fld)
	if t != corev1.LimitTypePod && t != corev1.LimitTypeContainer {
		return errs
	}
	n := string(name)
	switch {
	case !strings.Contains(n, "/"):
		if !containerResources.Has(name) && !strings.HasPrefix(n, corev1.ResourceHugePagesPrefix) {
			errs = append(errs, field.Invalid(fld, name, "must be a standard resource for containers"))
		}
	case !strings.Contains(n, corev1.ResourceDefaultNamespacePrefix) && !isCounted(name):
		errs = append(errs, field.Invalid(fld, name, "doesn't follow extended resource name standard"))
	}
	return errs
}

// overcommits reports whether a resource's request may be below its
// limit: not for huge pages and extended resources.
func overcommits(name corev1.ResourceName) bool {
	n := string(name)
	native := !strings.Contains(n, "/") || strings.Contains(n, corev1.ResourceDefaultNamespacePrefix)
	return native && !strings.HasPrefix(n, corev1.ResourceHugePagesPrefix)
}

func validateLimitRange(l *corev1.LimitRange) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[corev1.LimitType]()
	for i := range l.Spec.Limits {
		item := &l.Spec.Limits[i]
		p := field.NewPath("spec", "limits").Index(i)
		t := string(item.Type)
		typeErrs := validation.IsQualifiedName(t)
		for _, msg := range typeErrs {
			errs = append(errs, field.Invalid(p.Child("type"), t, msg))
		}
		if len(typeErrs) == 0 && !strings.Contains(t, "/") && !limitTypes.Has(item.Type) {
			errs = append(errs, field.Invalid(p.Child("type"), t, "must be a standard limit type or fully qualified"))
		}
		if seen.Has(item.Type) {
			errs = append(errs, field.Duplicate(p.Child("type"), item.Type))
		}
		seen.Insert(item.Type)

		names := sets.New[corev1.ResourceName]()
		check := func(part string, list corev1.ResourceList) {
			for _, name := range sortedResourceNames(list) {
				errs = append(errs, validateLimitResourceName(item.Type, name, p.Child(part).Key(string(name)))...)
				names.Insert(name)
			}
		}
		check("max", item.Max)
		check("min", item.Min)
		if item.Type == corev1.LimitTypePod {
			if len(item.Default) > 0 {
				errs = append(errs, field.Forbidden(p.Child("default"), "may not be specified when `type` is 'Pod'"))
			}
			if len(item.DefaultRequest) > 0 {
				errs = append(errs, field.Forbidden(p.Child("defaultRequest"), "may not be specified when `type` is 'Pod'"))
			}
		} else {
			check("default", item.Default)
			check("defaultRequest", item.DefaultRequest)
		}
		if item.Type == corev1.LimitTypePersistentVolumeClaim {
			_, hasMin := item.Min[corev1.ResourceStorage]
			_, hasMax := item.Max[corev1.ResourceStorage]
			if !hasMin && !hasMax {
				errs = append(errs, field.Required(p.Child("limits"), "either minimum or maximum storage value is required, but neither was provided"))
			}
		}
		check("maxLimitRequestRatio", item.MaxLimitRequestRatio)

		for _, name := range sets.List(names) {
			k := string(name)
			minQ, hasMin := item.Min[name]
			maxQ, hasMax := item.Max[name]
			def, hasDef := item.Default[name]
			defReq, hasDefReq := item.DefaultRequest[name]
			ratio, hasRatio := item.MaxLimitRequestRatio[name]
			if item.Type == corev1.LimitTypePod {
				hasDef, hasDefReq = false, false
			}
			if hasMin && hasMax && minQ.Cmp(maxQ) > 0 {
				errs = append(errs, field.Invalid(p.Child("min").Key(k), minQ, fmt.Sprintf("min value %s is greater than max value %s", minQ.String(), maxQ.String())))
			}
			if hasDefReq && hasMin && minQ.Cmp(defReq) > 0 {
				errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(k), defReq, fmt.Sprintf("min value %s is greater than default request value %s", minQ.String(), defReq.String())))
			}
			if hasDefReq && hasMax && defReq.Cmp(maxQ) > 0 {
				errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(k), defReq, fmt.Sprintf("default request value %s is greater than max value %s", defReq.String(), maxQ.String())))
			}
			if hasDefReq && hasDef && defReq.Cmp(def) > 0 {
				errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(k), defReq, fmt.Sprintf("default request value %s is greater than default limit value %s", defReq.String(), def.String())))
			}
			if hasDef && hasMin && minQ.Cmp(def) > 0 {
				errs = append(errs, field.Invalid(p.Child("default").Key(k), minQ, fmt.Sprintf("min value %s is greater than default value %s", minQ.String(), def.String())))
			}
			if hasDef && hasMax && def.Cmp(maxQ) > 0 {
				errs = append(errs, field.Invalid(p.Child("default").Key(k), maxQ, fmt.Sprintf("default value %s is greater than max value %s", def.String(), maxQ.String())))
			}
			if hasRatio && ratio.Cmp(*resource.NewQuantity(1, resource.DecimalSI)) < 0 {
				errs = append(errs, field.Invalid(p.Child("maxLimitRequestRatio").Key(k), ratio, fmt.Sprintf("ratio %s is less than 1", ratio.String())))
			}
			if hasRatio && hasMin && hasMax {
				r, lo, hi := float64(ratio.Value()), minQ.Value(), maxQ.Value()
				if ratio.Value() < resource.MaxMilliValue && lo < resource.MaxMilliValue && hi < resource.MaxMilliValue {
					r, lo, hi = float64(ratio.MilliValue())/1000, minQ.MilliValue(), maxQ.MilliValue()
				}
				if limit := float64(hi) / float64(lo); r > limit {
					errs = append(errs, field.Invalid(p.Child("maxLimitRequestRatio").Key(k), ratio, fmt.Sprintf("ratio %s is greater than max/min = %f", ratio.String(), limit)))
				}
			}
			if !overcommits(name) && hasDef && hasDefReq && def.Cmp(defReq) != 0 {
				errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(k), defReq, fmt.Sprintf("default value %s must equal to defaultRequest value %s in %s", def.String(), defReq.String(), k)))
			}
		}
	}
	return errs
}
