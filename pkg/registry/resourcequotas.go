package registry

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
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
		CopyStatus:     func(dst, src *corev1.ResourceQuota) { dst.Status = src.Status },
		ResetForStatus: func(q, old *corev1.ResourceQuota) { q.Spec = old.Spec },
		ResetStatus:    func(q *corev1.ResourceQuota) { q.Status = corev1.ResourceQuotaStatus{} },
		ValidateFunc: func(q *corev1.ResourceQuota) field.ErrorList {
			errs := validateQuotaSpec(&q.Spec, field.NewPath("spec"))
			errs = append(errs, validateQuotaList(q.Status.Hard, field.NewPath("status", "hard"))...)
			errs = append(errs, validateQuotaList(q.Status.Used, field.NewPath("status", "used"))...)
			return errs
		},
	}
}

var (
	// quotaStandardResources are the unprefixed names a quota may limit.
	quotaStandardResources = sets.New[corev1.ResourceName](
		corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
		corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsStorage, corev1.ResourceRequestsEphemeralStorage,
		corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage,
		corev1.ResourcePods, corev1.ResourceQuotas, corev1.ResourceServices, corev1.ResourceReplicationControllers,
		corev1.ResourceSecrets, corev1.ResourcePersistentVolumeClaims, corev1.ResourceConfigMaps,
		corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers,
	)
	// otherStandardResources are unprefixed names that are resources but
	// not ones a quota limits.
	otherStandardResources = sets.New[corev1.ResourceName](corev1.ResourceStorage)
	// countedResources are measured in whole numbers.
	countedResources = sets.New[corev1.ResourceName](
		corev1.ResourcePods, corev1.ResourceQuotas, corev1.ResourceServices, corev1.ResourceReplicationControllers,
		corev1.ResourceSecrets, corev1.ResourceConfigMaps, corev1.ResourcePersistentVolumeClaims,
		corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers,
	)
	quotaScopes = sets.New(
		corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating,
		corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort,
		corev1.ResourceQuotaScopePriorityClass, corev1.ResourceQuotaScopeCrossNamespacePodAffinity,
		corev1.ResourceQuotaScopeVolumeAttributesClass,
	)
	podComputeResources = sets.New[corev1.ResourceName](
		corev1.ResourcePods, corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceLimitsCPU,
		corev1.ResourceLimitsMemory, corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory,
	)
)

func isHugePagesQuota(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) || strings.HasPrefix(string(name), corev1.ResourceRequestsHugePagesPrefix)
}

func isStandardQuotaResource(name corev1.ResourceName) bool {
	return quotaStandardResources.Has(name) || isHugePagesQuota(name)
}

// isCounted reports whether a quota resource is a whole number: the object
// counts, and the extended resources (qualified names outside
// kubernetes.io, such as count/deployments.apps or example.com/gpu).
func isCounted(name corev1.ResourceName) bool {
	if countedResources.Has(name) {
		return true
	}
	n := string(name)
	native := !strings.Contains(n, "/") || strings.Contains(n, corev1.ResourceDefaultNamespacePrefix)
	return !native && !strings.HasPrefix(n, corev1.DefaultResourceRequestsPrefix) && len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+n)) == 0
}

// scopeApplies reports whether a quota of the scope may limit a resource
// of the standard ones.
func scopeApplies(scope corev1.ResourceQuotaScope, name corev1.ResourceName) bool {
	switch scope {
	case corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeNotBestEffort,
		corev1.ResourceQuotaScopePriorityClass, corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return podComputeResources.Has(name)
	case corev1.ResourceQuotaScopeBestEffort:
		return name == corev1.ResourcePods
	case corev1.ResourceQuotaScopeVolumeAttributesClass:
		return name == corev1.ResourcePersistentVolumeClaims || name == corev1.ResourceRequestsStorage
	}
	return true
}

// validateQuotaList checks the names and amounts of a quota's resources.
func validateQuotaList(l corev1.ResourceList, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedResourceNames(l) {
		p := fld.Key(string(name))
		msgs := validation.IsQualifiedName(string(name))
		for _, msg := range msgs {
			errs = append(errs, field.Invalid(p, name, msg))
		}
		if !strings.Contains(string(name), "/") {
			if len(msgs) == 0 && !isStandardQuotaResource(name) && !otherStandardResources.Has(name) {
				errs = append(errs, field.Invalid(p, name, "must be a standard resource type or fully qualified"))
			}
			if !isStandardQuotaResource(name) {
				errs = append(errs, field.Invalid(p, name, "must be a standard resource for quota"))
			}
		}
		q := l[name]
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(p, q.String(), apivalidation.IsNegativeErrorMsg))
		}
		if isCounted(name) && q.MilliValue()%1000 != 0 {
			errs = append(errs, field.Invalid(p, q, "must be an integer"))
		}
	}
	return errs
}

// validateQuotaSpec checks what a quota limits and in which scopes.
func validateQuotaSpec(s *corev1.ResourceQuotaSpec, fld *field.Path) field.ErrorList {
	errs := validateQuotaList(s.Hard, fld.Child("hard"))
	hard := sortedResourceNames(s.Hard)
	conflicts := func(scopes sets.Set[corev1.ResourceQuotaScope], p *field.Path, v any) {
		if scopes.HasAll(corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort) {
			errs = append(errs, field.Invalid(p, v, "conflicting scopes"))
		}
		if scopes.HasAll(corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating) {
			errs = append(errs, field.Invalid(p, v, "conflicting scopes"))
		}
	}
	if len(s.Scopes) > 0 {
		p := fld.Child("scopes")
		seen := sets.New[corev1.ResourceQuotaScope]()
		for _, scope := range s.Scopes {
			if !quotaScopes.Has(scope) {
				errs = append(errs, field.Invalid(p, s.Scopes, "unsupported scope"))
			}
			for _, name := range hard {
				if isStandardQuotaResource(name) && !scopeApplies(scope, name) {
					errs = append(errs, field.Invalid(p, s.Scopes, "unsupported scope applied to resource"))
				}
			}
			seen.Insert(scope)
		}
		conflicts(seen, p, s.Scopes)
	}
	if s.ScopeSelector != nil {
		p := fld.Child("scopeSelector", "matchExpressions")
		seen := sets.New[corev1.ResourceQuotaScope]()
		for _, req := range s.ScopeSelector.MatchExpressions {
			if !quotaScopes.Has(req.ScopeName) {
				errs = append(errs, field.Invalid(p.Child("scopeName"), req.ScopeName, "unsupported scope"))
			}
			for _, name := range hard {
				if isStandardQuotaResource(name) && !scopeApplies(req.ScopeName, name) {
					errs = append(errs, field.Invalid(p, s.ScopeSelector, "unsupported scope applied to resource"))
				}
			}
			switch req.ScopeName {
			case corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort, corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating:
				if req.Operator != corev1.ScopeSelectorOpExists {
					errs = append(errs, field.Invalid(p.Child("operator"), req.Operator,
						"must be 'Exist' only operator when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort and ResourceQuotaScopeNotBestEffort"))
				}
			}
			switch req.Operator {
			case corev1.ScopeSelectorOpIn, corev1.ScopeSelectorOpNotIn:
				if len(req.Values) == 0 {
					errs = append(errs, field.Required(p.Child("values"), "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"))
				}
			case corev1.ScopeSelectorOpExists, corev1.ScopeSelectorOpDoesNotExist:
				if len(req.Values) != 0 {
					errs = append(errs, field.Invalid(p.Child("values"), req.Values, "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"))
				}
			default:
				errs = append(errs, field.Invalid(p.Child("operator"), req.Operator, "not a valid selector operator"))
			}
			seen.Insert(req.ScopeName)
		}
		conflicts(seen, p, s.Scopes)
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
