package registry

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
)

// Namespaces is core/v1 namespaces: cluster-scoped, DNS-label names, status
// subresource with phase Active until deleted.
func Namespaces() Strategy {
	return &Resource[*corev1.Namespace]{
		Meta: Info{
			GVK:      corev1.SchemeGroupVersion.WithKind("Namespace"),
			Resource: "namespaces", Singular: "namespace", ShortNames: []string{"ns"},
			Status: true, ReturnDeletedObject: true, NoDeleteCollection: true,
		},
		NewFunc:     func() *corev1.Namespace { return &corev1.Namespace{} },
		NewListFunc: func() runtime.Object { return &corev1.NamespaceList{} },
		NameFunc:    apivalidation.ValidateNamespaceName,
		CopyStatus:  func(dst, src *corev1.Namespace) { dst.Status = src.Status },
		ResetStatus: func(n *corev1.Namespace) { n.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive} },
		Defaults: func(n *corev1.Namespace) {
			if n.Labels == nil {
				n.Labels = map[string]string{}
			}
			// Kubernetes labels every namespace with its own name.
			n.Labels[corev1.LabelMetadataName] = n.Name
			if n.Status.Phase == "" {
				n.Status.Phase = corev1.NamespaceActive
			}
		},
		Fields: func(n *corev1.Namespace) fields.Set {
			return fields.Set{"status.phase": string(n.Status.Phase)}
		},
	}
}
