package registry

import (
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// RuntimeClasses is node.k8s.io/v1 runtimeclasses: the container runtime
// handler a pod runs with, its overhead and where it can be scheduled. The
// handler never changes.
func RuntimeClasses() Strategy {
	return &Resource[*nodev1.RuntimeClass]{
		Meta: Info{
			GVK:      nodev1.SchemeGroupVersion.WithKind("RuntimeClass"),
			Resource: "runtimeclasses", Singular: "runtimeclass",
			AllowCreateOnUpdate: true,
		},
		NewFunc:      func() *nodev1.RuntimeClass { return &nodev1.RuntimeClass{} },
		NewListFunc:  func() runtime.Object { return &nodev1.RuntimeClassList{} },
		ValidateFunc: validateRuntimeClass,
		ValidateUpdateFunc: func(r, old *nodev1.RuntimeClass) field.ErrorList {
			return apivalidation.ValidateImmutableField(r.Handler, old.Handler, field.NewPath("handler"))
		},
	}
}

func validateRuntimeClass(r *nodev1.RuntimeClass) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range apivalidation.NameIsDNSLabel(r.Handler, false) {
		errs = append(errs, field.Invalid(field.NewPath("handler"), r.Handler, msg))
	}
	if r.Overhead != nil {
		errs = append(errs, validateResources(&corev1.ResourceRequirements{Limits: r.Overhead.PodFixed}, field.NewPath("overhead"))...)
	}
	if s := r.Scheduling; s != nil {
		fld := field.NewPath("scheduling")
		errs = append(errs, metav1validation.ValidateLabels(s.NodeSelector, fld.Child("nodeSelector"))...)
		errs = append(errs, validateTolerations(s.Tolerations, fld.Child("tolerations"))...)
		seen := map[corev1.Toleration]bool{}
		for i, t := range s.Tolerations {
			key := corev1.Toleration{Key: t.Key, Operator: t.Operator, Value: t.Value, Effect: t.Effect}
			if seen[key] {
				errs = append(errs, field.Duplicate(fld.Child("tolerations").Index(i), t))
			}
			seen[key] = true
		}
	}
	return errs
}

// validateTolerations checks tolerations as a pod's are checked: a
// qualified key (required unless the operator is Exists), Equal or Exists,
// a label value, a known effect, and tolerationSeconds only for NoExecute.
func validateTolerations(ts []corev1.Toleration, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range ts {
		tf := fld.Index(i)
		if t.Key != "" {
			errs = append(errs, metav1validation.ValidateLabelName(t.Key, tf.Child("key"))...)
		}
		if t.Key == "" && t.Operator != corev1.TolerationOpExists {
			errs = append(errs, field.Invalid(tf.Child("operator"), t.Operator, "operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			errs = append(errs, field.Invalid(tf.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
			for _, msg := range validation.IsValidLabelValue(t.Value) {
				errs = append(errs, field.Invalid(tf.Child("operator"), t.Value, msg))
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(tf.Child("operator"), t, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			errs = append(errs, field.NotSupported(tf.Child("operator"), t.Operator, []string{string(corev1.TolerationOpEqual), string(corev1.TolerationOpExists)}))
		}
		switch t.Effect {
		case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			errs = append(errs, field.NotSupported(tf.Child("effect"), t.Effect, []string{
				string(corev1.TaintEffectNoSchedule), string(corev1.TaintEffectPreferNoSchedule), string(corev1.TaintEffectNoExecute),
			}))
		}
	}
	return errs
}
