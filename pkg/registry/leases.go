package registry

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Leases is coordination.k8s.io/v1 leases, the lock of leader election.
func Leases() Strategy {
	return &Resource[*coordinationv1.Lease]{
		Meta: Info{
			GVK:      coordinationv1.SchemeGroupVersion.WithKind("Lease"),
			Resource: "leases", Singular: "lease",
			Namespaced: true,
		},
		NewFunc:     func() *coordinationv1.Lease { return &coordinationv1.Lease{} },
		NewListFunc: func() runtime.Object { return &coordinationv1.LeaseList{} },
		ValidateFunc: func(l *coordinationv1.Lease) field.ErrorList {
			var errs field.ErrorList
			spec := field.NewPath("spec")
			if d := l.Spec.LeaseDurationSeconds; d != nil && *d <= 0 {
				errs = append(errs, field.Invalid(spec.Child("leaseDurationSeconds"), *d, "must be greater than 0"))
			}
			if t := l.Spec.LeaseTransitions; t != nil && *t < 0 {
				errs = append(errs, field.Invalid(spec.Child("leaseTransitions"), *t, "must be greater than or equal to 0"))
			}
			return errs
		},
	}
}
