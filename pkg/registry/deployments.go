package registry

import (
	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Deployments is apps/v1 deployments: status and scale subresources, an
// immutable selector that must match the template's labels.
func Deployments() Strategy {
	return &Resource[*appsv1.Deployment]{
		Meta: Info{
			GVK:      appsv1.SchemeGroupVersion.WithKind("Deployment"),
			Resource: "deployments", Singular: "deployment", ShortNames: []string{"deploy"}, Categories: []string{"all"},
			Namespaced: true, Status: true, Scale: true,
		},
		NewFunc:     func() *appsv1.Deployment { return &appsv1.Deployment{} },
		NewListFunc: func() runtime.Object { return &appsv1.DeploymentList{} },
		Spec:        func(d *appsv1.Deployment) any { return d.Spec },
		CopyStatus:  func(dst, src *appsv1.Deployment) { dst.Status = src.Status },
		ResetForStatus: func(d, old *appsv1.Deployment) {
			d.Spec = old.Spec
			d.Labels = old.Labels
		},
		ResetStatus: func(d *appsv1.Deployment) { d.Status = appsv1.DeploymentStatus{} },
		Defaults: func(d *appsv1.Deployment) {
			s := &d.Spec
			if s.Replicas == nil {
				s.Replicas = ptr[int32](1)
			}
			if s.Strategy.Type == "" {
				s.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
			}
			if s.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
				if s.Strategy.RollingUpdate == nil {
					s.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{}
				}
				if s.Strategy.RollingUpdate.MaxUnavailable == nil {
					s.Strategy.RollingUpdate.MaxUnavailable = ptr(intstr.FromString("25%"))
				}
				if s.Strategy.RollingUpdate.MaxSurge == nil {
					s.Strategy.RollingUpdate.MaxSurge = ptr(intstr.FromString("25%"))
				}
			}
			if s.RevisionHistoryLimit == nil {
				s.RevisionHistoryLimit = ptr[int32](10)
			}
			if s.ProgressDeadlineSeconds == nil {
				s.ProgressDeadlineSeconds = ptr[int32](600)
			}
			defaultPodSpec(&s.Template.Spec)
		},
		ValidateFunc: func(d *appsv1.Deployment) field.ErrorList {
			spec := field.NewPath("spec")
			var errs field.ErrorList
			if d.Spec.Replicas != nil {
				errs = append(errs, validateNonNegative(int64(*d.Spec.Replicas), spec.Child("replicas"))...)
			}
			errs = append(errs, validateNonNegative(int64(d.Spec.MinReadySeconds), spec.Child("minReadySeconds"))...)
			errs = append(errs, validateSelector(d.Spec.Selector, spec.Child("selector"))...)
			errs = append(errs, validatePodTemplate(&d.Spec.Template, d.Spec.Selector, spec.Child("template"))...)
			switch d.Spec.Strategy.Type {
			case appsv1.RecreateDeploymentStrategyType:
				if d.Spec.Strategy.RollingUpdate != nil {
					errs = append(errs, field.Forbidden(spec.Child("strategy", "rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'"))
				}
			case appsv1.RollingUpdateDeploymentStrategyType:
				errs = append(errs, validateRollingUpdate(d.Spec.Strategy.RollingUpdate, spec.Child("strategy", "rollingUpdate"))...)
			default:
				errs = append(errs, field.NotSupported(spec.Child("strategy", "type"), d.Spec.Strategy.Type, []appsv1.DeploymentStrategyType{appsv1.RecreateDeploymentStrategyType, appsv1.RollingUpdateDeploymentStrategyType}))
			}
			return errs
		},
		ValidateUpdateFunc: func(d, old *appsv1.Deployment) field.ErrorList {
			return validateSelectorImmutable(d.Spec.Selector, old.Spec.Selector)
		},
		Replicas: func(d *appsv1.Deployment) (int32, int32, string) {
			return deref(d.Spec.Replicas), d.Status.Replicas, selectorString(d.Spec.Selector)
		},
		SetReplicasFunc: func(d *appsv1.Deployment, n int32) { d.Spec.Replicas = &n },
	}
}

func validateRollingUpdate(ru *appsv1.RollingUpdateDeployment, fld *field.Path) field.ErrorList {
	if ru == nil {
		return nil
	}
	var errs field.ErrorList
	isZero := func(v *intstr.IntOrString) bool {
		return v == nil || v.Type == intstr.Int && v.IntVal == 0 || v.Type == intstr.String && (v.StrVal == "0%" || v.StrVal == "0")
	}
	for name, v := range map[string]*intstr.IntOrString{"maxUnavailable": ru.MaxUnavailable, "maxSurge": ru.MaxSurge} {
		if v == nil {
			continue
		}
		if _, err := intstr.GetScaledValueFromIntOrPercent(v, 100, true); err != nil {
			errs = append(errs, field.Invalid(fld.Child(name), v.String(), "must be an integer or percentage (e.g '5%')"))
		} else if v.Type == intstr.Int && v.IntVal < 0 {
			errs = append(errs, field.Invalid(fld.Child(name), v.IntVal, "must be greater than or equal to 0"))
		}
	}
	if isZero(ru.MaxUnavailable) && isZero(ru.MaxSurge) {
		errs = append(errs, field.Invalid(fld.Child("maxUnavailable"), ru.MaxUnavailable.String(), "may not be 0 when `maxSurge` is 0"))
	}
	return errs
}

func validateSelectorImmutable(sel, old *metav1.LabelSelector) field.ErrorList {
	if !apiequality.Semantic.DeepEqual(sel, old) {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "selector"), sel, "field is immutable")}
	}
	return nil
}

// selectorString renders a label selector the way Scale.status.selector does.
func selectorString(sel *metav1.LabelSelector) string {
	if sel == nil {
		return ""
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return ""
	}
	return s.String()
}

func ptr[T any](v T) *T { return &v }

func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}
