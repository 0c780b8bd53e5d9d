package registry

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DaemonSets is apps/v1 daemonsets: a status subresource, an immutable
// selector that must match the template's labels, pods that always restart.
func DaemonSets() Strategy {
	r := &Resource[*appsv1.DaemonSet]{
		Meta: Info{
			GVK:      appsv1.SchemeGroupVersion.WithKind("DaemonSet"),
			Resource: "daemonsets", Singular: "daemonset", ShortNames: []string{"ds"}, Categories: []string{"all"},
			Namespaced: true, Status: true,
		},
		NewFunc:        func() *appsv1.DaemonSet { return &appsv1.DaemonSet{} },
		NewListFunc:    func() runtime.Object { return &appsv1.DaemonSetList{} },
		Spec:           func(d *appsv1.DaemonSet) any { return d.Spec },
		CopyStatus:     func(dst, src *appsv1.DaemonSet) { dst.Status = src.Status },
		ResetForStatus: func(d, old *appsv1.DaemonSet) { d.Spec = old.Spec },
		ResetStatus:    func(d *appsv1.DaemonSet) { d.Status = appsv1.DaemonSetStatus{} },
		Defaults: func(d *appsv1.DaemonSet) {
			us := &d.Spec.UpdateStrategy
			if us.Type == "" {
				us.Type = appsv1.RollingUpdateDaemonSetStrategyType
			}
			if us.Type == appsv1.RollingUpdateDaemonSetStrategyType {
				if us.RollingUpdate == nil {
					us.RollingUpdate = &appsv1.RollingUpdateDaemonSet{}
				}
				if us.RollingUpdate.MaxUnavailable == nil {
					us.RollingUpdate.MaxUnavailable = ptr(intstr.FromInt32(1))
				}
				if us.RollingUpdate.MaxSurge == nil {
					us.RollingUpdate.MaxSurge = ptr(intstr.FromInt32(0))
				}
			}
			if d.Spec.RevisionHistoryLimit == nil {
				d.Spec.RevisionHistoryLimit = ptr[int32](10)
			}
			defaultPodSpec(&d.Spec.Template.Spec)
		},
		ValidateFunc: validateDaemonSet,
		ValidateUpdateFunc: func(d, old *appsv1.DaemonSet) field.ErrorList {
			errs := validateSelectorImmutable(d.Spec.Selector, old.Spec.Selector)
			st, fld := &d.Status, field.NewPath("status")
			errs = append(errs, validateCounters(fld,
				counter{"currentNumberScheduled", int64(st.CurrentNumberScheduled)}, counter{"numberMisscheduled", int64(st.NumberMisscheduled)},
				counter{"desiredNumberScheduled", int64(st.DesiredNumberScheduled)}, counter{"numberReady", int64(st.NumberReady)},
				counter{"observedGeneration", st.ObservedGeneration}, counter{"updatedNumberScheduled", int64(st.UpdatedNumberScheduled)},
				counter{"numberAvailable", int64(st.NumberAvailable)}, counter{"numberUnavailable", int64(st.NumberUnavailable)})...)
			if st.CollisionCount != nil {
				errs = append(errs, validateNonNegative(int64(*st.CollisionCount), fld.Child("collisionCount"))...)
			}
			return append(errs, validateCollisionCount(st.CollisionCount, old.Status.CollisionCount, fld)...)
		},
	}
	return &hooked[*appsv1.DaemonSet]{
		Resource: r,
		prepare: func(d *appsv1.DaemonSet) {
			setTemplateGeneration(d, 1)
		},
		prepareUpdate: func(d, old *appsv1.DaemonSet) {
			gen := templateGeneration(old)
			if !apiequality.Semantic.DeepEqual(d.Spec.Template, old.Spec.Template) {
				gen++
			}
			setTemplateGeneration(d, gen)
		},
	}
}

// A daemon set's template generation, which apps/v1 keeps in an
// annotation: 1 on create, one more on each change of the template.
func templateGeneration(d *appsv1.DaemonSet) int64 {
	gen, err := strconv.ParseInt(d.Annotations[appsv1.DeprecatedTemplateGeneration], 10, 64)
	if err != nil {
		return 0
	}
	return gen
}

func setTemplateGeneration(d *appsv1.DaemonSet, gen int64) {
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations[appsv1.DeprecatedTemplateGeneration] = strconv.FormatInt(gen, 10)
}

func validateDaemonSet(d *appsv1.DaemonSet) field.ErrorList {
	spec := &d.Spec
	fld := field.NewPath("spec")
	var errs field.ErrorList
	// A missing selector selects nothing, so it does not match the template.
	errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, fld.Child("selector"))...)
	if sel, err := metav1.LabelSelectorAsSelector(spec.Selector); err == nil && !sel.Matches(labels.Set(spec.Template.Labels)) {
		errs = append(errs, field.Invalid(fld.Child("template", "metadata", "labels"), spec.Template.Labels, "`selector` does not match template `labels`"))
	}
	if spec.Selector != nil && len(spec.Selector.MatchLabels)+len(spec.Selector.MatchExpressions) == 0 {
		errs = append(errs, field.Invalid(fld.Child("selector"), spec.Selector, "empty selector is invalid for daemonset"))
	}
	errs = append(errs, validateTemplate(&spec.Template, fld.Child("template"))...)
	errs = append(errs, validateAlwaysRestart(&spec.Template.Spec, "DaemonSet", fld.Child("template", "spec"))...)
	errs = append(errs, validateNonNegative(int64(spec.MinReadySeconds), fld.Child("minReadySeconds"))...)
	us := fld.Child("updateStrategy")
	switch t := spec.UpdateStrategy.Type; t {
	case appsv1.OnDeleteDaemonSetStrategyType:
	case appsv1.RollingUpdateDaemonSetStrategyType:
		ru := spec.UpdateStrategy.RollingUpdate
		if ru == nil {
			errs = append(errs, field.Required(us.Child("rollingUpdate"), ""))
			break
		}
		p := us.Child("rollingUpdate")
		errs = append(errs, validateIntOrPercent(ru.MaxUnavailable, p.Child("maxUnavailable"))...)
		errs = append(errs, validateIntOrPercent(ru.MaxSurge, p.Child("maxSurge"))...)
		errs = append(errs, validateAtMost100Percent(ru.MaxUnavailable, p.Child("maxUnavailable"))...)
		errs = append(errs, validateAtMost100Percent(ru.MaxSurge, p.Child("maxSurge"))...)
		unavailable, surge := intOrPercentValue(ru.MaxUnavailable) != 0, intOrPercentValue(ru.MaxSurge) != 0
		switch {
		case unavailable && surge:
			errs = append(errs, field.Invalid(p.Child("maxSurge"), ru.MaxSurge, "may not be set when maxUnavailable is non-zero"))
		case !unavailable && !surge:
			errs = append(errs, field.Required(p.Child("maxUnavailable"), "cannot be 0 when maxSurge is 0"))
		}
	default:
		errs = append(errs, field.NotSupported(us, spec.UpdateStrategy, []appsv1.DaemonSetUpdateStrategyType{appsv1.RollingUpdateDaemonSetStrategyType, appsv1.OnDeleteDaemonSetStrategyType}))
	}
	if spec.RevisionHistoryLimit != nil {
		errs = append(errs, validateNonNegative(int64(*spec.RevisionHistoryLimit), fld.Child("revisionHistoryLimit"))...)
	}
	return errs
}
