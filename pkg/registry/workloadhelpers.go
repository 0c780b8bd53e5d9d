package registry

import (
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// hooked is a Resource with behaviour the Resource builder has no field
// for: what PrepareForCreate adds once the server has given the object its
// uid, name and creation time; checks that apply to a new object but not
// to an update; and what an update through the main resource changes
// beyond the generation.
type hooked[T Object] struct {
	*Resource[T]
	// prepare runs after the Resource's PrepareForCreate; nil: nothing.
	prepare func(T)
	// validate adds checks of a new object; nil: none.
	validate func(T) field.ErrorList
	// prepareUpdate runs after the Resource's PrepareForUpdate with the
	// new and the stored state; nil: nothing.
	prepareUpdate func(obj, old T)
}

var _ Strategy = (*hooked[*corev1.Pod])(nil)

// PrepareForCreate implements Strategy.
func (c *hooked[T]) PrepareForCreate(obj runtime.Object) {
	c.Resource.PrepareForCreate(obj)
	if c.prepare != nil {
		c.prepare(c.cast(obj))
	}
}

// PrepareForUpdate implements Strategy.
func (c *hooked[T]) PrepareForUpdate(obj, old runtime.Object) {
	c.Resource.PrepareForUpdate(obj, old)
	if c.prepareUpdate != nil {
		c.prepareUpdate(c.cast(obj), c.cast(old))
	}
}

// Validate implements Strategy.
func (c *hooked[T]) Validate(obj runtime.Object) field.ErrorList {
	errs := c.Resource.Validate(obj)
	if c.validate != nil {
		errs = append(errs, c.validate(c.cast(obj))...)
	}
	return errs
}

// validateTemplate checks a pod template's metadata and spec, whatever its
// restart policy; the workload that owns it checks the policy.
func validateTemplate(tpl *corev1.PodTemplateSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, metav1validation.ValidateLabels(tpl.Labels, fld.Child("metadata", "labels"))...)
	errs = append(errs, apivalidation.ValidateAnnotations(tpl.Annotations, fld.Child("metadata", "annotations"))...)
	errs = append(errs, validatePodSpec(&tpl.Spec, fld.Child("spec"))...)
	if len(tpl.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(fld.Child("spec", "ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return errs
}

// validateControllerSelector checks the required, non-empty label selector
// of a workload of the given kind ("statefulset", "daemonset") and that it
// selects the pods of its template.
func validateControllerSelector(sel *metav1.LabelSelector, tpl *corev1.PodTemplateSpec, kind string, spec *field.Path) field.ErrorList {
	fld := spec.Child("selector")
	if sel == nil {
		return field.ErrorList{field.Required(fld, "")}
	}
	errs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, fld)
	if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
		errs = append(errs, field.Invalid(fld, sel, "empty selector is invalid for "+kind))
	}
	errs = append(errs, validateSelectorMatches(sel, tpl, spec.Child("template"))...)
	return errs
}

// validateSelectorMatches checks that a selector selects its template's labels.
func validateSelectorMatches(sel *metav1.LabelSelector, tpl *corev1.PodTemplateSpec, fld *field.Path) field.ErrorList {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil || s.Empty() || s.Matches(labels.Set(tpl.Labels)) {
		return nil
	}
	return field.ErrorList{field.Invalid(fld.Child("metadata", "labels"), tpl.Labels, "`selector` does not match template `labels`")}
}

// validateAlwaysRestart checks the restart policy of the template of a
// workload whose pods run forever, and that it sets no deadline.
func validateAlwaysRestart(spec *corev1.PodSpec, kind string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(fld.Child("restartPolicy"), spec.RestartPolicy, []corev1.RestartPolicy{corev1.RestartPolicyAlways}))
	}
	if spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(fld.Child("activeDeadlineSeconds"), "activeDeadlineSeconds in "+kind+" is not Supported"))
	}
	return errs
}

// validateImmutable reports a changed field as Kubernetes does.
func validateImmutable(v, old any, fld *field.Path) field.ErrorList {
	if apiequality.Semantic.DeepEqual(v, old) {
		return nil
	}
	return field.ErrorList{field.Invalid(fld, v, apivalidation.FieldImmutableErrorMsg)}
}

// validateIntOrPercent checks a non-negative count or a percentage.
func validateIntOrPercent(v *intstr.IntOrString, fld *field.Path) field.ErrorList {
	if v == nil {
		return nil
	}
	if v.Type == intstr.String {
		var errs field.ErrorList
		for _, msg := range validation.IsValidPercent(v.StrVal) {
			errs = append(errs, field.Invalid(fld, v, msg))
		}
		return errs
	}
	return validateNonNegative(int64(v.IntVal), fld)
}

// validateAtMost100Percent refuses a percentage above 100%.
func validateAtMost100Percent(v *intstr.IntOrString, fld *field.Path) field.ErrorList {
	if v == nil || v.Type != intstr.String {
		return nil
	}
	if n, err := intstr.GetScaledValueFromIntOrPercent(v, 100, true); err == nil && n > 100 {
		return field.ErrorList{field.Invalid(fld, v, "must not be greater than 100%")}
	}
	return nil
}

// intOrPercentValue is the number a count or percentage names, 0 when
// it does not parse.
func intOrPercentValue(v *intstr.IntOrString) int {
	if v == nil {
		return 0
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, 100, true)
	if err != nil {
		return 0
	}
	return n
}

// counter is a named count of a workload's status, for validateCounters.
type counter struct {
	name  string
	value int64
}

// validateCounters checks that status counts are not negative.
func validateCounters(fld *field.Path, cs ...counter) field.ErrorList {
	var errs field.ErrorList
	for _, c := range cs {
		errs = append(errs, validateNonNegative(c.value, fld.Child(c.name))...)
	}
	return errs
}

// validateCollisionCount refuses a status write that lowers the count of
// revision name collisions, which only grows.
func validateCollisionCount(count, old *int32, fld *field.Path) field.ErrorList {
	if old == nil || (count != nil && *count >= *old) {
		return nil
	}
	return field.ErrorList{field.Invalid(fld.Child("collisionCount"), deref(count), "cannot be decremented")}
}
