package registry_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kplane/kplane/pkg/registry"
)

// Adding a resource is one Resource value: here service accounts, with a
// rule that a name may not start with "system-".
func ExampleResource() {
	serviceAccounts := &registry.Resource[*corev1.ServiceAccount]{
		Meta: registry.Info{
			GVK:      corev1.SchemeGroupVersion.WithKind("ServiceAccount"),
			Resource: "serviceaccounts", Singular: "serviceaccount", ShortNames: []string{"sa"},
			Namespaced: true,
		},
		NewFunc:     func() *corev1.ServiceAccount { return &corev1.ServiceAccount{} },
		NewListFunc: func() runtime.Object { return &corev1.ServiceAccountList{} },
		ValidateFunc: func(sa *corev1.ServiceAccount) field.ErrorList {
			if len(sa.Name) > 7 && sa.Name[:7] == "system-" {
				return field.ErrorList{field.Forbidden(field.NewPath("metadata", "name"), "reserved prefix")}
			}
			return nil
		},
	}
	var st registry.Strategy = serviceAccounts // add it to apiserver.Config.Resources
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "system-x", Namespace: "default"}}
	fmt.Println(st.Validate(sa).ToAggregate())
	// Output: metadata.name: Forbidden: reserved prefix
}
