package registry

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// PodTemplates is core/v1 podtemplates: named pod templates, of any
// restart policy, defaulted and validated as the templates of workloads.
func PodTemplates() Strategy {
	return &Resource[*corev1.PodTemplate]{
		Meta: Info{
			GVK:      corev1.SchemeGroupVersion.WithKind("PodTemplate"),
			Resource: "podtemplates", Singular: "podtemplate",
			Namespaced: true,
		},
		NewFunc:     func() *corev1.PodTemplate { return &corev1.PodTemplate{} },
		NewListFunc: func() runtime.Object { return &corev1.PodTemplateList{} },
		Spec:        func(p *corev1.PodTemplate) any { return p.Template },
		Defaults:    func(p *corev1.PodTemplate) { defaultPodSpec(&p.Template.Spec) },
		ValidateFunc: func(p *corev1.PodTemplate) field.ErrorList {
			return validateTemplate(&p.Template, field.NewPath("template"))
		},
	}
}
