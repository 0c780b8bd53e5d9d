package registry

import (
	"encoding/json"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ControllerRevisions is apps/v1 controllerrevisions: the immutable
// snapshots of a workload's template that stateful and daemon sets roll
// between; data is required and never changes, the revision may.
func ControllerRevisions() Strategy {
	return &Resource[*appsv1.ControllerRevision]{
		Meta: Info{
			GVK:      appsv1.SchemeGroupVersion.WithKind("ControllerRevision"),
			Resource: "controllerrevisions", Singular: "controllerrevision",
			Namespaced: true,
		},
		NewFunc:     func() *appsv1.ControllerRevision { return &appsv1.ControllerRevision{} },
		NewListFunc: func() runtime.Object { return &appsv1.ControllerRevisionList{} },
		ValidateFunc: func(r *appsv1.ControllerRevision) field.ErrorList {
			var errs field.ErrorList
			if r.Data.Raw == nil && r.Data.Object == nil {
				errs = append(errs, field.Required(field.NewPath("data"), "data is mandatory"))
			}
			errs = append(errs, validateNonNegative(r.Revision, field.NewPath("revision"))...)
			return errs
		},
		ValidateUpdateFunc: func(r, old *appsv1.ControllerRevision) field.ErrorList {
			if sameJSON(r.Data.Raw, old.Data.Raw) {
				return nil
			}
			return validateImmutable(r.Data, old.Data, field.NewPath("data"))
		},
	}
}

// sameJSON reports whether two encodings hold the same JSON value, so that
// a client re-sending a revision with other spacing or key order does not
// change its data.
func sameJSON(a, b []byte) bool {
	if a == nil || b == nil {
		return false
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}
