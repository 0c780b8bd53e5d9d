package registry

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ServiceAccounts is core/v1 serviceaccounts: identities for pods, with
// the names of the secrets and image pull secrets they may use. As in
// Kubernetes only the metadata is validated.
func ServiceAccounts() Strategy {
	return &Resource[*corev1.ServiceAccount]{
		Meta: Info{
			GVK:      corev1.SchemeGroupVersion.WithKind("ServiceAccount"),
			Resource: "serviceaccounts", Singular: "serviceaccount", ShortNames: []string{"sa"},
			Namespaced: true,
		},
		NewFunc:     func() *corev1.ServiceAccount { return &corev1.ServiceAccount{} },
		NewListFunc: func() runtime.Object { return &corev1.ServiceAccountList{} },
	}
}
