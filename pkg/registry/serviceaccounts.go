package registry

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ServiceAccounts is core/v1 serviceaccounts: identities for pods, with
// the names of the secrets and image pull secrets they may use.
func ServiceAccounts() Strategy {
	return &Resource[*corev1.ServiceAccount]{
		Meta: Info{
			GVK:      corev1.SchemeGroupVersion.WithKind("ServiceAccount"),
			Resource: "serviceaccounts", Singular: "serviceaccount", ShortNames: []string{"sa"},
			Namespaced: true,
		},
		NewFunc:     func() *corev1.ServiceAccount { return &corev1.ServiceAccount{} },
		NewListFunc: func() runtime.Object { return &corev1.ServiceAccountList{} },
		ValidateFunc: func(sa *corev1.ServiceAccount) field.ErrorList {
			var errs field.ErrorList
			for i, ref := range sa.ImagePullSecrets {
				p := field.NewPath("imagePullSecrets").Index(i).Child("name")
				if ref.Name == "" {
					errs = append(errs, field.Required(p, ""))
					continue
				}
				for _, msg := range apivalidation.NameIsDNSSubdomain(ref.Name, false) {
					errs = append(errs, field.Invalid(p, ref.Name, msg))
				}
			}
			return errs
		},
	}
}
