package registry

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Namespaces is core/v1 namespaces: cluster-scoped, DNS-label names, status
// subresource with phase Active until deleted. A new namespace always gets
// the "kubernetes" spec finalizer, which the namespace controller removes
// (through the finalize subresource) once the namespace is empty.
func Namespaces() Strategy {
	return &Resource[*corev1.Namespace]{
		Meta: Info{
			GVK:      corev1.SchemeGroupVersion.WithKind("Namespace"),
			Resource: "namespaces", Singular: "namespace", ShortNames: []string{"ns"},
			Status: true, ReturnDeletedObject: true, NoDeleteCollection: true,
		},
		NewFunc:        func() *corev1.Namespace { return &corev1.Namespace{} },
		NewListFunc:    func() runtime.Object { return &corev1.NamespaceList{} },
		NameFunc:       apivalidation.ValidateNamespaceName,
		CopyStatus:     func(dst, src *corev1.Namespace) { dst.Status = src.Status },
		ResetForStatus: func(n, old *corev1.Namespace) { n.Spec = old.Spec },
		ResetStatus: func(n *corev1.Namespace) {
			// Runs on create only: a new namespace starts Active, held by
			// the "kubernetes" finalizer whatever the client sent, as in
			// Kubernetes (updates cannot remove it; only finalize can).
			n.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
			if !slices.Contains(n.Spec.Finalizers, corev1.FinalizerKubernetes) {
				n.Spec.Finalizers = append(n.Spec.Finalizers, corev1.FinalizerKubernetes)
			}
		},
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
		ValidateFunc: func(n *corev1.Namespace) field.ErrorList {
			return ValidateNamespaceFinalizers(n.Spec.Finalizers)
		},
		Fields: func(n *corev1.Namespace) fields.Set {
			return fields.Set{"status.phase": string(n.Status.Phase)}
		},
	}
}

// ValidateNamespaceFinalizers checks the names in a namespace's
// spec.finalizers: qualified names, either "kubernetes" (or another
// standard finalizer) or of the form domain/name.
func ValidateNamespaceFinalizers(finalizers []corev1.FinalizerName) field.ErrorList {
	var errs field.ErrorList
	path := field.NewPath("spec", "finalizers")
	for i, f := range finalizers {
		p := path.Index(i)
		name := string(f)
		if e := apivalidation.ValidateFinalizerName(name, p); len(e) > 0 {
			errs = append(errs, e...)
			continue
		}
		switch name {
		case string(corev1.FinalizerKubernetes), metav1.FinalizerOrphanDependents, metav1.FinalizerDeleteDependents:
		default:
			if !strings.Contains(name, "/") {
				errs = append(errs, field.Invalid(p, name, "name is neither a standard finalizer name nor is it fully qualified"))
			}
		}
	}
	return errs
}
