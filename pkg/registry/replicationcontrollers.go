package registry

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ReplicationControllers is core/v1 replicationcontrollers: status and
// scale subresources; the selector, a plain label map, defaults to the
// template's labels and must select them.
func ReplicationControllers() Strategy {
	return &Resource[*corev1.ReplicationController]{
		Meta: Info{
			GVK:      corev1.SchemeGroupVersion.WithKind("ReplicationController"),
			Resource: "replicationcontrollers", Singular: "replicationcontroller", ShortNames: []string{"rc"}, Categories: []string{"all"},
			Namespaced: true, Status: true, Scale: true,
		},
		NewFunc:        func() *corev1.ReplicationController { return &corev1.ReplicationController{} },
		NewListFunc:    func() runtime.Object { return &corev1.ReplicationControllerList{} },
		Spec:           func(r *corev1.ReplicationController) any { return r.Spec },
		CopyStatus:     func(dst, src *corev1.ReplicationController) { dst.Status = src.Status },
		ResetForStatus: func(r, old *corev1.ReplicationController) { r.Spec = old.Spec },
		ResetStatus:    func(r *corev1.ReplicationController) { r.Status = corev1.ReplicationControllerStatus{} },
		Defaults: func(r *corev1.ReplicationController) {
			if r.Spec.Template != nil && r.Spec.Template.Labels != nil {
				if len(r.Spec.Selector) == 0 {
					r.Spec.Selector = r.Spec.Template.Labels
				}
				if len(r.Labels) == 0 {
					r.Labels = r.Spec.Template.Labels
				}
			}
			if r.Spec.Replicas == nil {
				r.Spec.Replicas = ptr[int32](1)
			}
			if r.Spec.Template != nil {
				defaultPodSpec(&r.Spec.Template.Spec)
			}
		},
		ValidateFunc: func(r *corev1.ReplicationController) field.ErrorList {
			fld := field.NewPath("spec")
			var errs field.ErrorList
			errs = append(errs, validateNonNegative(int64(r.Spec.MinReadySeconds), fld.Child("minReadySeconds"))...)
			if labels.Set(r.Spec.Selector).AsSelector().Empty() {
				errs = append(errs, field.Required(fld.Child("selector"), ""))
			}
			if r.Spec.Replicas != nil {
				errs = append(errs, validateNonNegative(int64(*r.Spec.Replicas), fld.Child("replicas"))...)
			}
			tpl := fld.Child("template")
			if r.Spec.Template == nil {
				return append(errs, field.Required(tpl, ""))
			}
			if sel := labels.Set(r.Spec.Selector).AsSelector(); !sel.Empty() && !sel.Matches(labels.Set(r.Spec.Template.Labels)) {
				errs = append(errs, field.Invalid(tpl.Child("metadata", "labels"), r.Spec.Template.Labels, "`selector` does not match template `labels`"))
			}
			errs = append(errs, validateTemplate(r.Spec.Template, tpl)...)
			errs = append(errs, validateAlwaysRestart(&r.Spec.Template.Spec, "ReplicationController", tpl.Child("spec"))...)
			return errs
		},
		ValidateUpdateFunc: func(r, _ *corev1.ReplicationController) field.ErrorList {
			st, fld := &r.Status, field.NewPath("status")
			errs := validateCounters(fld,
				counter{"replicas", int64(st.Replicas)}, counter{"fullyLabeledReplicas", int64(st.FullyLabeledReplicas)},
				counter{"readyReplicas", int64(st.ReadyReplicas)}, counter{"availableReplicas", int64(st.AvailableReplicas)},
				counter{"observedGeneration", st.ObservedGeneration})
			msg := "cannot be greater than status.replicas"
			if st.FullyLabeledReplicas > st.Replicas {
				errs = append(errs, field.Invalid(fld.Child("fullyLabeledReplicas"), st.FullyLabeledReplicas, msg))
			}
			if st.ReadyReplicas > st.Replicas {
				errs = append(errs, field.Invalid(fld.Child("readyReplicas"), st.ReadyReplicas, msg))
			}
			if st.AvailableReplicas > st.Replicas {
				errs = append(errs, field.Invalid(fld.Child("availableReplicas"), st.AvailableReplicas, msg))
			}
			if st.AvailableReplicas > st.ReadyReplicas {
				errs = append(errs, field.Invalid(fld.Child("availableReplicas"), st.AvailableReplicas, "cannot be greater than readyReplicas"))
			}
			return errs
		},
		Fields: func(r *corev1.ReplicationController) fields.Set {
			return fields.Set{"status.replicas": strconv.Itoa(int(r.Status.Replicas))}
		},
		Replicas: func(r *corev1.ReplicationController) (int32, int32, string) {
			return deref(r.Spec.Replicas), r.Status.Replicas, labels.SelectorFromSet(r.Spec.Selector).String()
		},
		SetReplicasFunc: func(r *corev1.ReplicationController, n int32) { r.Spec.Replicas = &n },
	}
}
