package registry

import (
	policyv1 "k8s.io/api/policy/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// PodDisruptionBudgets is policy/v1 poddisruptionbudgets: how many of the
// selected pods voluntary disruptions must leave, with a status
// subresource the disruption controller writes.
func PodDisruptionBudgets() Strategy {
	return &Resource[*policyv1.PodDisruptionBudget]{
		Meta: Info{
			GVK:      policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"),
			Resource: "poddisruptionbudgets", Singular: "poddisruptionbudget", ShortNames: []string{"pdb"},
			Namespaced: true, Status: true,
		},
		NewFunc:        func() *policyv1.PodDisruptionBudget { return &policyv1.PodDisruptionBudget{} },
		NewListFunc:    func() runtime.Object { return &policyv1.PodDisruptionBudgetList{} },
		Spec:           func(p *policyv1.PodDisruptionBudget) any { return p.Spec },
		CopyStatus:     func(dst, src *policyv1.PodDisruptionBudget) { dst.Status = src.Status },
		ResetForStatus: func(p, old *policyv1.PodDisruptionBudget) { p.Spec = old.Spec },
		ResetStatus:    func(p *policyv1.PodDisruptionBudget) { p.Status = policyv1.PodDisruptionBudgetStatus{} },
		ValidateFunc:   validatePodDisruptionBudget,
		// The status only changes through the status subresource; checking
		// it on every update checks those writes.
		ValidateUpdateFunc: func(p, _ *policyv1.PodDisruptionBudget) field.ErrorList {
			fld := field.NewPath("status")
			st := p.Status
			errs := metav1validation.ValidateConditions(st.Conditions, fld.Child("conditions"))
			errs = append(errs, apivalidation.ValidateNonnegativeField(int64(st.DisruptionsAllowed), fld.Child("disruptionsAllowed"))...)
			errs = append(errs, apivalidation.ValidateNonnegativeField(int64(st.CurrentHealthy), fld.Child("currentHealthy"))...)
			errs = append(errs, apivalidation.ValidateNonnegativeField(int64(st.DesiredHealthy), fld.Child("desiredHealthy"))...)
			return append(errs, apivalidation.ValidateNonnegativeField(int64(st.ExpectedPods), fld.Child("expectedPods"))...)
		},
	}
}

func validatePodDisruptionBudget(p *policyv1.PodDisruptionBudget) field.ErrorList {
	spec := p.Spec
	fld := field.NewPath("spec")
	var errs field.ErrorList
	if spec.MinAvailable != nil && spec.MaxUnavailable != nil {
		errs = append(errs, field.Invalid(fld, spec, "minAvailable and maxUnavailable cannot be both set"))
	}
	if spec.MinAvailable != nil {
		errs = append(errs, validateIntOrPercent(spec.MinAvailable, fld.Child("minAvailable"))...)
		errs = append(errs, validateAtMost100Percent(spec.MinAvailable, fld.Child("minAvailable"))...)
	}
	if spec.MaxUnavailable != nil {
		errs = append(errs, validateIntOrPercent(spec.MaxUnavailable, fld.Child("maxUnavailable"))...)
		errs = append(errs, validateAtMost100Percent(spec.MaxUnavailable, fld.Child("maxUnavailable"))...)
	}
	errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, fld.Child("selector"))...)
	if pol := spec.UnhealthyPodEvictionPolicy; pol != nil && *pol != policyv1.IfHealthyBudget && *pol != policyv1.AlwaysAllow {
		errs = append(errs, field.NotSupported(fld.Child("unhealthyPodEvictionPolicy"), *pol, []string{string(policyv1.AlwaysAllow), string(policyv1.IfHealthyBudget)}))
	}
	return errs
}
