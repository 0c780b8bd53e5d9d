package registry

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ResourceQuotas is core/v1 resourcequotas: a status subresource that the
// quota controller writes the used amounts to.
func ResourceQuotas() Strategy {
	return &Resource[*corev1.ResourceQuota]{
		Meta: Info{
			GVK:      corev1.SchemeGroupVersion.WithKind("ResourceQuota"),
			Resource: "resourcequotas", Singular: "resourcequota", ShortNames: []string{"quota"},
			Namespaced: true, Status: true,
		},
		NewFunc:        func() *corev1.ResourceQuota { return &corev1.ResourceQuota{} },
		NewListFunc:    func() runtime.Object { return &corev1.ResourceQuotaList{} },
		Spec:           func(q *corev1.ResourceQuota) any { return q.Spec },
		CopyStatus:     func(dst, src *corev1.ResourceQuota) { dst.Status = src.Status },
		ResetForStatus: func(q, old *corev1.ResourceQuota) { q.Spec = old.Spec },
		ResetStatus:    func(q *corev1.ResourceQuota) { q.Status = corev1.ResourceQuotaStatus{} },
		ValidateFunc: func(q *corev1.ResourceQuota) field.ErrorList {
			errs := validateQuantities(q.Spec.Hard, field.NewPath("spec", "hard"))
			errs = append(errs, validateQuantities(q.Status.Hard, field.NewPath("status", "hard"))...)
			errs = append(errs, validateQuantities(q.Status.Used, field.NewPath("status", "used"))...)
			for i, s := range q.Spec.Scopes {
				if !quotaScopes.Has(s) {
					errs = append(errs, field.Invalid(field.NewPath("spec", "scopes").Index(i), s, "unsupported scope"))
				}
			}
			return errs
		},
	}
}

var quotaScopes = sets.New(
	corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating,
	corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort,
	corev1.ResourceQuotaScopePriorityClass, corev1.ResourceQuotaScopeCrossNamespacePodAffinity,
	corev1.ResourceQuotaScopeVolumeAttributesClass,
)

// validateQuantities checks the names of a resource list (qualified names)
// and that no amount is negative.
func validateQuantities(l corev1.ResourceList, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedResourceNames(l) {
		p := fld.Key(string(name))
		for _, msg := range validation.IsQualifiedName(string(name)) {
			errs = append(errs, field.Invalid(p, name, msg))
		}
		if q := l[name]; q.Sign() < 0 {
			errs = append(errs, field.Invalid(p, q.String(), "must be greater than or equal to 0"))
		}
	}
	return errs
}

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

var limitTypes = sets.New(corev1.LimitTypePod, corev1.LimitTypeContainer, corev1.LimitTypePersistentVolumeClaim)

func validateLimitRange(l *corev1.LimitRange) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[corev1.LimitType]()
	for i, item := range l.Spec.Limits {
		p := field.NewPath("spec", "limits").Index(i)
		if seen.Has(item.Type) {
			errs = append(errs, field.Duplicate(p.Child("type"), item.Type))
		}
		seen.Insert(item.Type)
		if !limitTypes.Has(item.Type) {
			errs = append(errs, field.NotSupported(p.Child("type"), item.Type, sets.List(limitTypes)))
		}
		for _, part := range []struct {
			name string
			l    corev1.ResourceList
		}{{"max", item.Max}, {"min", item.Min}, {"default", item.Default}, {"defaultRequest", item.DefaultRequest}, {"maxLimitRequestRatio", item.MaxLimitRequestRatio}} {
			errs = append(errs, validateQuantities(part.l, p.Child(part.name))...)
		}
		if item.Type == corev1.LimitTypePod && (len(item.Default) > 0 || len(item.DefaultRequest) > 0) {
			errs = append(errs, field.Forbidden(p.Child("default"), "may not be specified when `type` is 'Pod'"))
		}
		for _, name := range sortedResourceNames(item.Min) {
			minQ := item.Min[name]
			if maxQ, ok := item.Max[name]; ok && minQ.Cmp(maxQ) > 0 {
				errs = append(errs, field.Invalid(p.Child("min").Key(string(name)), minQ.String(), fmt.Sprintf("min value %s is greater than max value %s", minQ.String(), maxQ.String())))
			}
		}
	}
	return errs
}
