package registry

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ReplicaSets is apps/v1 replicasets: status and scale subresources, an
// immutable selector that must match the template's labels.
func ReplicaSets() Strategy {
	return &Resource[*appsv1.ReplicaSet]{
		Meta: Info{
			GVK:      appsv1.SchemeGroupVersion.WithKind("ReplicaSet"),
			Resource: "replicasets", Singular: "replicaset", ShortNames: []string{"rs"}, Categories: []string{"all"},
			Namespaced: true, Status: true, Scale: true,
		},
		NewFunc:        func() *appsv1.ReplicaSet { return &appsv1.ReplicaSet{} },
		NewListFunc:    func() runtime.Object { return &appsv1.ReplicaSetList{} },
		Spec:           func(r *appsv1.ReplicaSet) any { return r.Spec },
		CopyStatus:     func(dst, src *appsv1.ReplicaSet) { dst.Status = src.Status },
		ResetForStatus: func(r, old *appsv1.ReplicaSet) { r.Spec = old.Spec },
		ResetStatus:    func(r *appsv1.ReplicaSet) { r.Status = appsv1.ReplicaSetStatus{} },
		Defaults: func(r *appsv1.ReplicaSet) {
			if r.Spec.Replicas == nil {
				r.Spec.Replicas = ptr[int32](1)
			}
			defaultPodSpec(&r.Spec.Template.Spec)
		},
		ValidateFunc: func(r *appsv1.ReplicaSet) field.ErrorList {
			spec := field.NewPath("spec")
			var errs field.ErrorList
			if r.Spec.Replicas != nil {
				errs = append(errs, validateNonNegative(int64(*r.Spec.Replicas), spec.Child("replicas"))...)
			}
			errs = append(errs, validateNonNegative(int64(r.Spec.MinReadySeconds), spec.Child("minReadySeconds"))...)
			errs = append(errs, validateSelector(r.Spec.Selector, spec.Child("selector"))...)
			errs = append(errs, validatePodTemplate(&r.Spec.Template, r.Spec.Selector, spec.Child("template"))...)
			return errs
		},
		ValidateUpdateFunc: func(r, old *appsv1.ReplicaSet) field.ErrorList {
			return validateSelectorImmutable(r.Spec.Selector, old.Spec.Selector)
		},
		Fields: func(r *appsv1.ReplicaSet) fields.Set {
			return fields.Set{"status.replicas": strconv.Itoa(int(r.Status.Replicas))}
		},
		Replicas: func(r *appsv1.ReplicaSet) (int32, int32, string) {
			return deref(r.Spec.Replicas), r.Status.Replicas, selectorString(r.Spec.Selector)
		},
		SetReplicasFunc: func(r *appsv1.ReplicaSet, n int32) { r.Spec.Replicas = &n },
	}
}
