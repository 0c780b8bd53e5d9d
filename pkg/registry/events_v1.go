package registry

import (
	"fmt"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The length limits kube-apiserver puts on events that have an eventTime.
const (
	eventReportingInstanceMaxLen = 128
	eventActionMaxLen            = 128
	eventReasonMaxLen            = 128
	eventNoteMaxLen              = 1024
)

// eventsV1 serves events.k8s.io/v1 events from the core/v1 events store.
type eventsV1 struct {
	updateRules[*eventsv1.Event]
}

var _ VersionConverter = eventsV1{}

// EventsV1 is events.k8s.io/v1 events: the objects of Events seen through
// events.k8s.io/v1, as kube-apiserver serves both versions from one store.
// Validation is kube-apiserver's for writes through events.k8s.io/v1: it
// runs on the core/v1 form of the event, so its field paths are core/v1's
// (involvedObject, message, source, count ...), as in Kubernetes.
func EventsV1() Strategy {
	r := &Resource[*eventsv1.Event]{
		Meta: Info{
			GVK:      eventsv1.SchemeGroupVersion.WithKind("Event"),
			Resource: "events", Singular: "event", ShortNames: []string{"ev"},
			Namespaced: true, AllowCreateOnUpdate: true,
		},
		NewFunc:     func() *eventsv1.Event { return &eventsv1.Event{} },
		NewListFunc: func() runtime.Object { return &eventsv1.EventList{} },
		ValidateFunc: func(e *eventsv1.Event) field.ErrorList {
			return validateEventV1Create(eventToCore(e))
		},
		Fields: func(e *eventsv1.Event) fields.Set {
			source := e.DeprecatedSource.Component
			if source == "" {
				source = e.ReportingController
			}
			return fields.Set{
				"regarding.kind":            e.Regarding.Kind,
				"regarding.namespace":       e.Regarding.Namespace,
				"regarding.name":            e.Regarding.Name,
				"regarding.uid":             string(e.Regarding.UID),
				"regarding.apiVersion":      e.Regarding.APIVersion,
				"regarding.resourceVersion": e.Regarding.ResourceVersion,
				"regarding.fieldPath":       e.Regarding.FieldPath,
				"reason":                    e.Reason,
				"reportingController":       e.ReportingController,
				"source":                    source,
				"type":                      e.Type,
			}
		},
	}
	return eventsV1{updateRules[*eventsv1.Event]{r, func(e, old *eventsv1.Event) field.ErrorList {
		return validateEventV1Update(eventToCore(e), eventToCore(old))
	}}}
}

// StorageGVK implements VersionConverter.
func (eventsV1) StorageGVK() schema.GroupVersionKind {
	return corev1.SchemeGroupVersion.WithKind("Event")
}

// ToStorage implements VersionConverter.
func (eventsV1) ToStorage(obj runtime.Object) (runtime.Object, error) {
	e, ok := obj.(*eventsv1.Event)
	if !ok {
		return nil, fmt.Errorf("not an events.k8s.io/v1 Event: %T", obj)
	}
	return eventToCore(e), nil
}

// FromStorage implements VersionConverter.
func (eventsV1) FromStorage(obj runtime.Object) (runtime.Object, error) {
	e, ok := obj.(*corev1.Event)
	if !ok {
		return nil, fmt.Errorf("not a core/v1 Event: %T", obj)
	}
	return eventToV1(e), nil
}

// EventToCore returns e, an events.k8s.io/v1 Event, as core/v1 sees it,
// for readers that handle one version only, such as table printers. e is
// not changed and shares no memory with the result.
func EventToCore(e *eventsv1.Event) *corev1.Event { return eventToCore(e) }

// eventToCore converts an events.k8s.io/v1 Event into core/v1, field by
// field as Kubernetes does: regarding is involvedObject, note is message,
// the deprecated fields are the core/v1 fields they are named after, and
// the rest keep their names (reportingController is core/v1's
// reportingComponent in JSON).
func eventToCore(in *eventsv1.Event) *corev1.Event {
	out := &corev1.Event{
		TypeMeta:            metav1.TypeMeta{APIVersion: corev1.SchemeGroupVersion.String(), Kind: "Event"},
		ObjectMeta:          *in.ObjectMeta.DeepCopy(),
		InvolvedObject:      in.Regarding,
		Reason:              in.Reason,
		Message:             in.Note,
		Source:              in.DeprecatedSource,
		FirstTimestamp:      *in.DeprecatedFirstTimestamp.DeepCopy(),
		LastTimestamp:       *in.DeprecatedLastTimestamp.DeepCopy(),
		Count:               in.DeprecatedCount,
		Type:                in.Type,
		EventTime:           *in.EventTime.DeepCopy(),
		Action:              in.Action,
		Related:             copyPtr(in.Related),
		ReportingController: in.ReportingController,
		ReportingInstance:   in.ReportingInstance,
	}
	if s := in.Series; s != nil {
		out.Series = &corev1.EventSeries{Count: s.Count, LastObservedTime: *s.LastObservedTime.DeepCopy()}
	}
	return out
}

// eventToV1 converts a core/v1 Event into events.k8s.io/v1, the inverse
// of eventToCore.
func eventToV1(in *corev1.Event) *eventsv1.Event {
	out := &eventsv1.Event{
		TypeMeta:                 metav1.TypeMeta{APIVersion: eventsv1.SchemeGroupVersion.String(), Kind: "Event"},
		ObjectMeta:               *in.ObjectMeta.DeepCopy(),
		EventTime:                *in.EventTime.DeepCopy(),
		ReportingController:      in.ReportingController,
		ReportingInstance:        in.ReportingInstance,
		Action:                   in.Action,
		Reason:                   in.Reason,
		Regarding:                in.InvolvedObject,
		Related:                  copyPtr(in.Related),
		Note:                     in.Message,
		Type:                     in.Type,
		DeprecatedSource:         in.Source,
		DeprecatedFirstTimestamp: *in.FirstTimestamp.DeepCopy(),
		DeprecatedLastTimestamp:  *in.LastTimestamp.DeepCopy(),
		DeprecatedCount:          in.Count,
	}
	if s := in.Series; s != nil {
		out.Series = &eventsv1.EventSeries{Count: s.Count, LastObservedTime: *s.LastObservedTime.DeepCopy()}
	}
	return out
}

// validateEventV1Create checks e, written through events.k8s.io/v1 and
// converted to core/v1, as kube-apiserver does: the checks every event
// passes, then the stricter ones of the events.k8s.io API (an eventTime,
// none of the deprecated fields, a known type, a sound series).
func validateEventV1Create(e *corev1.Event) field.ErrorList {
	errs := validateEventCommon(e)
	errs = append(errs, validateEventSeries(e)...)
	if e.EventTime.IsZero() {
		errs = append(errs, field.Required(field.NewPath("eventTime"), ""))
	}
	if e.Type != corev1.EventTypeNormal && e.Type != corev1.EventTypeWarning {
		errs = append(errs, field.Invalid(field.NewPath("type"), "", fmt.Sprintf("has invalid value: %v", e.Type)))
	}
	if !e.FirstTimestamp.IsZero() {
		errs = append(errs, field.Invalid(field.NewPath("firstTimestamp"), "", "needs to be unset"))
	}
	if !e.LastTimestamp.IsZero() {
		errs = append(errs, field.Invalid(field.NewPath("lastTimestamp"), "", "needs to be unset"))
	}
	if e.Count != 0 {
		errs = append(errs, field.Invalid(field.NewPath("count"), "", "needs to be unset"))
	}
	if e.Source.Component != "" || e.Source.Host != "" {
		errs = append(errs, field.Invalid(field.NewPath("source"), "", "needs to be unset"))
	}
	return errs
}

// validateEventV1Update checks an update of old into e, both converted to
// core/v1. Kubernetes checks updates alike in every version, since an
// event created in one may be updated in another: the checks every event
// passes, the series when it changed, and everything but the series and
// the metadata immutable. The eventTime may change below a microsecond,
// which is all its JSON form keeps.
func validateEventV1Update(e, old *corev1.Event) field.ErrorList {
	errs := validateEventCommon(e)
	if !reflect.DeepEqual(e.Series, old.Series) {
		errs = append(errs, validateEventSeries(e)...)
	}
	immutable := func(n, o any, name string) {
		errs = append(errs, apivalidation.ValidateImmutableField(n, o, field.NewPath(name))...)
	}
	immutable(e.InvolvedObject, old.InvolvedObject, "involvedObject")
	immutable(e.Reason, old.Reason, "reason")
	immutable(e.Message, old.Message, "message")
	immutable(e.Source, old.Source, "source")
	immutable(e.FirstTimestamp, old.FirstTimestamp, "firstTimestamp")
	immutable(e.LastTimestamp, old.LastTimestamp, "lastTimestamp")
	immutable(e.Count, old.Count, "count")
	immutable(e.Type, old.Type, "type")
	if !e.EventTime.Truncate(time.Microsecond).Equal(old.EventTime.Truncate(time.Microsecond)) {
		immutable(e.EventTime, old.EventTime, "eventTime")
	}
	immutable(e.Action, old.Action, "action")
	immutable(e.Related, old.Related, "related")
	immutable(e.ReportingController, old.ReportingController, "reportingController")
	immutable(e.ReportingInstance, old.ReportingInstance, "reportingInstance")
	return errs
}

// validateEventSeries checks that a series has seen the event at least
// twice and says when it last did.
func validateEventSeries(e *corev1.Event) field.ErrorList {
	var errs field.ErrorList
	if s := e.Series; s != nil {
		if s.Count < 2 {
			errs = append(errs, field.Invalid(field.NewPath("series", "count"), "", "should be at least 2"))
		}
		if s.LastObservedTime.IsZero() {
			errs = append(errs, field.Required(field.NewPath("series", "lastObservedTime"), ""))
		}
	}
	return errs
}

// validateEventCommon holds the checks kube-apiserver makes of every event
// written through events.k8s.io/v1. An event without an eventTime (an old
// one, written through core/v1) need only be in the namespace of what it is
// about; one with an eventTime needs its reporter, action and reason, within
// their lengths, and may leave regarding's namespace empty only in default
// or kube-system. (Kubernetes does not compare a non-empty regarding
// namespace with the event's here.)
func validateEventCommon(e *corev1.Event) field.ErrorList {
	var errs field.ErrorList
	nsPath := field.NewPath("involvedObject", "namespace")
	const nsMismatch = "does not match event.namespace"
	if e.EventTime.IsZero() {
		switch ns := e.InvolvedObject.Namespace; {
		case ns == "" && e.Namespace != metav1.NamespaceNone && e.Namespace != metav1.NamespaceDefault,
			ns != "" && ns != e.Namespace:
			errs = append(errs, field.Invalid(nsPath, ns, nsMismatch))
		}
	} else {
		if e.InvolvedObject.Namespace == "" && e.Namespace != metav1.NamespaceDefault && e.Namespace != metav1.NamespaceSystem {
			errs = append(errs, field.Invalid(nsPath, e.InvolvedObject.Namespace, nsMismatch))
		}
		controller := field.NewPath("reportingController")
		if e.ReportingController == "" {
			errs = append(errs, field.Required(controller, ""))
		}
		for _, msg := range validation.IsQualifiedName(e.ReportingController) {
			errs = append(errs, field.Invalid(controller, e.ReportingController, msg))
		}
		errs = append(errs, requiredWithin(field.NewPath("reportingInstance"), e.ReportingInstance, eventReportingInstanceMaxLen, true)...)
		errs = append(errs, requiredWithin(field.NewPath("action"), e.Action, eventActionMaxLen, true)...)
		errs = append(errs, requiredWithin(field.NewPath("reason"), e.Reason, eventReasonMaxLen, true)...)
		errs = append(errs, requiredWithin(field.NewPath("message"), e.Message, eventNoteMaxLen, false)...)
	}
	for _, msg := range validation.IsDNS1123Subdomain(e.Namespace) {
		errs = append(errs, field.Invalid(field.NewPath("namespace"), e.Namespace, msg))
	}
	return errs
}

// requiredWithin checks that s is at most limit bytes long and, when
// required, not empty, with Kubernetes' messages for events.
func requiredWithin(path *field.Path, s string, limit int, required bool) field.ErrorList {
	var errs field.ErrorList
	if required && s == "" {
		errs = append(errs, field.Required(path, ""))
	}
	if len(s) > limit {
		errs = append(errs, field.Invalid(path, "", fmt.Sprintf("can have at most %d characters", limit)))
	}
	return errs
}
