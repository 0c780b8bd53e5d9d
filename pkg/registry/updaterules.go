package registry

import (
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// updateRules is a Resource whose updates are checked by rules of their
// own rather than by the create rules plus ValidateUpdateFunc: Kubernetes
// lets an object that predates a rule keep breaking it (webhooks with side
// effects, an HPA at minReplicas 0).
type updateRules[T Object] struct {
	*Resource[T]
	// validateUpdate checks the type-specific fields of an update; the
	// metadata is checked as Resource does.
	validateUpdate func(obj, old T) field.ErrorList
}

// ValidateUpdate implements Strategy.
func (u updateRules[T]) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	t, o := u.cast(obj), u.cast(old)
	errs := apivalidation.ValidateObjectMetaAccessor(t, u.Meta.Namespaced, u.nameFunc(), field.NewPath("metadata"))
	errs = append(errs, apivalidation.ValidateObjectMetaAccessorUpdate(t, o, field.NewPath("metadata"))...)
	return append(errs, u.validateUpdate(t, o)...)
}
