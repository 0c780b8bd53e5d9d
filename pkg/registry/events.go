package registry

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Events is core/v1 events: namespaced, written by components, created on
// update when missing (as event recorders expect).
func Events() Strategy {
	return &Resource[*corev1.Event]{
		Meta: Info{
			GVK:      corev1.SchemeGroupVersion.WithKind("Event"),
			Resource: "events", Singular: "event", ShortNames: []string{"ev"},
			Namespaced: true, AllowCreateOnUpdate: true,
		},
		NewFunc:     func() *corev1.Event { return &corev1.Event{} },
		NewListFunc: func() runtime.Object { return &corev1.EventList{} },
		ValidateFunc: func(e *corev1.Event) field.ErrorList {
			var errs field.ErrorList
			if e.InvolvedObject.Namespace != "" && e.InvolvedObject.Namespace != e.Namespace {
				errs = append(errs, field.Invalid(field.NewPath("involvedObject", "namespace"), e.InvolvedObject.Namespace, "does not match event.namespace"))
			}
			if e.Type != "" && e.Type != corev1.EventTypeNormal && e.Type != corev1.EventTypeWarning {
				errs = append(errs, field.NotSupported(field.NewPath("type"), e.Type, []string{corev1.EventTypeNormal, corev1.EventTypeWarning}))
			}
			return errs
		},
		Fields: func(e *corev1.Event) fields.Set {
			source := e.Source.Component
			if source == "" {
				source = e.ReportingController
			}
			return fields.Set{
				"involvedObject.kind":            e.InvolvedObject.Kind,
				"involvedObject.namespace":       e.InvolvedObject.Namespace,
				"involvedObject.name":            e.InvolvedObject.Name,
				"involvedObject.uid":             string(e.InvolvedObject.UID),
				"involvedObject.apiVersion":      e.InvolvedObject.APIVersion,
				"involvedObject.resourceVersion": e.InvolvedObject.ResourceVersion,
				"involvedObject.fieldPath":       e.InvolvedObject.FieldPath,
				"reason":                         e.Reason,
				"reportingComponent":             e.ReportingController,
				"source":                         source,
				"type":                           e.Type,
			}
		},
	}
}
