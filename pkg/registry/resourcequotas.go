package registry

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
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
