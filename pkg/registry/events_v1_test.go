package registry

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var eventTime = time.Date(2026, 12, 1, 10, 0, 0, 123456000, time.UTC)

// eventV1 is a valid events.k8s.io/v1 event about a pod.
func eventV1(name string) *eventsv1.Event {
	return &eventsv1.Event{
		TypeMeta:            metav1.TypeMeta{APIVersion: "events.k8s.io/v1", Kind: "Event"},
		ObjectMeta:          metav1.ObjectMeta{Name: name, Namespace: "team", Labels: map[string]string{"a": "b"}},
		EventTime:           metav1.NewMicroTime(eventTime),
		ReportingController: "example.com/scheduler",
		ReportingInstance:   "scheduler-node-1",
		Action:              "Binding",
		Reason:              "Scheduled",
		Regarding:           corev1.ObjectReference{Kind: "Pod", Namespace: "team", Name: "web", UID: "u1", APIVersion: "v1", ResourceVersion: "7", FieldPath: "spec"},
		Note:                "assigned team/web to node-1",
		Type:                corev1.EventTypeNormal,
	}
}

// The same event as the core/v1 API writes it.
func eventCoreOf(e *eventsv1.Event) *corev1.Event {
	return &corev1.Event{
		TypeMeta:            metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
		ObjectMeta:          *e.ObjectMeta.DeepCopy(),
		InvolvedObject:      e.Regarding,
		Reason:              e.Reason,
		Message:             e.Note,
		Type:                e.Type,
		EventTime:           e.EventTime,
		Action:              e.Action,
		ReportingController: e.ReportingController,
		ReportingInstance:   e.ReportingInstance,
	}
}

func TestEventsV1Conversion(t *testing.T) {
	conv := EventsV1().(VersionConverter)
	if got := conv.StorageGVK(); got != corev1.SchemeGroupVersion.WithKind("Event") {
		t.Fatalf("storage %v", got)
	}
	full := eventV1("full")
	full.Series = &eventsv1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(eventTime.Add(time.Minute))}
	full.Related = &corev1.ObjectReference{Kind: "Node", Name: "node-1"}
	full.DeprecatedSource = corev1.EventSource{Component: "kubelet", Host: "node-1"}
	full.DeprecatedFirstTimestamp = metav1.NewTime(eventTime.Truncate(time.Second))
	full.DeprecatedLastTimestamp = metav1.NewTime(eventTime.Add(time.Hour).Truncate(time.Second))
	full.DeprecatedCount = 4
	wantCore := eventCoreOf(full)
	wantCore.Series = &corev1.EventSeries{Count: 3, LastObservedTime: full.Series.LastObservedTime}
	wantCore.Related = &corev1.ObjectReference{Kind: "Node", Name: "node-1"}
	wantCore.Source = corev1.EventSource{Component: "kubelet", Host: "node-1"}
	wantCore.FirstTimestamp = full.DeprecatedFirstTimestamp
	wantCore.LastTimestamp = full.DeprecatedLastTimestamp
	wantCore.Count = 4

	for _, tt := range []struct {
		name string
		v1   *eventsv1.Event
		core *corev1.Event
	}{
		{"minimal", eventV1("min"), eventCoreOf(eventV1("min"))},
		{"every field", full, wantCore},
		{"empty", &eventsv1.Event{TypeMeta: metav1.TypeMeta{APIVersion: "events.k8s.io/v1", Kind: "Event"}},
			&corev1.Event{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Event"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.v1.DeepCopy()
			stored, err := conv.ToStorage(in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.core, stored); diff != "" {
				t.Errorf("to storage (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.v1, in); diff != "" {
				t.Errorf("input changed:\n%s", diff)
			}
			back, err := conv.FromStorage(stored)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.v1, back); diff != "" {
				t.Errorf("round trip from events.k8s.io/v1 (-want +got):\n%s", diff)
			}
			// And from core/v1: an event written by a core/v1 recorder.
			again, err := conv.ToStorage(back)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.core, again); diff != "" {
				t.Errorf("round trip from core/v1 (-want +got):\n%s", diff)
			}
			// The results share no memory with their inputs.
			if tt.v1.Labels != nil {
				back.(*eventsv1.Event).Labels["x"] = "y"
				if _, ok := stored.(*corev1.Event).Labels["x"]; ok {
					t.Error("conversion shares labels")
				}
			}
		})
	}

	if _, err := conv.ToStorage(&corev1.Event{}); err == nil {
		t.Error("ToStorage took a core/v1 Event")
	}
	if _, err := conv.FromStorage(&eventsv1.Event{}); err == nil {
		t.Error("FromStorage took an events.k8s.io/v1 Event")
	}
}

func TestEventsV1FieldSelectors(t *testing.T) {
	st := EventsV1()
	e := eventV1("a")
	_, fs, err := st.GetAttrs(e)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"metadata.name": "a", "metadata.namespace": "team",
		"regarding.kind": "Pod", "regarding.namespace": "team", "regarding.name": "web", "regarding.uid": "u1",
		"regarding.apiVersion": "v1", "regarding.resourceVersion": "7", "regarding.fieldPath": "spec",
		"reason": "Scheduled", "reportingController": "example.com/scheduler", "source": "example.com/scheduler", "type": "Normal",
	}
	if diff := cmp.Diff(want, map[string]string(fs)); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
	e.DeprecatedSource.Component = "kubelet"
	if _, fs, _ := st.GetAttrs(e); fs["source"] != "kubelet" {
		t.Errorf("source %q, want the deprecated source's component", fs["source"])
	}
	if labels := st.FieldLabels(); len(labels) != len(want) {
		t.Errorf("field labels %v", labels)
	}
}

func TestEventsV1ValidateCreate(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		name   string
		mutate func(*eventsv1.Event)
		want   []string
	}{
		{"valid", func(*eventsv1.Event) {}, nil},
		{"valid at the limits", func(e *eventsv1.Event) {
			e.ReportingInstance, e.Action, e.Reason, e.Note = long(128), long(128), long(128), long(1024)
		}, nil},
		{"valid series", func(e *eventsv1.Event) {
			e.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(eventTime)}
		}, nil},
		{"cluster-scoped object from default", func(e *eventsv1.Event) {
			e.Namespace, e.Regarding = "default", corev1.ObjectReference{Kind: "Node", Name: "n"}
		}, nil},
		{"cluster-scoped object from kube-system", func(e *eventsv1.Event) {
			e.Namespace, e.Regarding = "kube-system", corev1.ObjectReference{Kind: "Node", Name: "n"}
		}, nil},
		{"cluster-scoped object elsewhere", func(e *eventsv1.Event) { e.Regarding.Namespace = "" }, []string{
			`involvedObject.namespace: Invalid value: "": does not match event.namespace`,
		}},
		{"no eventTime", func(e *eventsv1.Event) { e.EventTime = metav1.MicroTime{} }, []string{
			"eventTime: Required value",
		}},
		{"no eventTime and another namespace", func(e *eventsv1.Event) {
			e.EventTime, e.Regarding.Namespace = metav1.MicroTime{}, "other"
		}, []string{
			`involvedObject.namespace: Invalid value: "other": does not match event.namespace`,
			"eventTime: Required value",
		}},
		{"nothing reported", func(e *eventsv1.Event) {
			e.ReportingController, e.ReportingInstance, e.Action, e.Reason = "", "", "", ""
		}, []string{
			"reportingController: Required value",
			`reportingController: Invalid value: "": name part must be non-empty`,
			`reportingController: Invalid value: "": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
			"reportingInstance: Required value",
			"action: Required value",
			"reason: Required value",
		}},
		{"too long", func(e *eventsv1.Event) {
			e.ReportingInstance, e.Action, e.Reason, e.Note = long(129), long(129), long(129), long(1025)
		}, []string{
			`reportingInstance: Invalid value: "": can have at most 128 characters`,
			`action: Invalid value: "": can have at most 128 characters`,
			`reason: Invalid value: "": can have at most 128 characters`,
			`message: Invalid value: "": can have at most 1024 characters`,
		}},
		{"bad type", func(e *eventsv1.Event) { e.Type = "Info" }, []string{
			`type: Invalid value: "": has invalid value: Info`,
		}},
		{"no type", func(e *eventsv1.Event) { e.Type = "" }, []string{
			`type: Invalid value: "": has invalid value: `,
		}},
		{"deprecated fields", func(e *eventsv1.Event) {
			e.DeprecatedFirstTimestamp = metav1.NewTime(eventTime)
			e.DeprecatedLastTimestamp = metav1.NewTime(eventTime)
			e.DeprecatedCount = 1
			e.DeprecatedSource = corev1.EventSource{Host: "h"}
		}, []string{
			`firstTimestamp: Invalid value: "": needs to be unset`,
			`lastTimestamp: Invalid value: "": needs to be unset`,
			`count: Invalid value: "": needs to be unset`,
			`source: Invalid value: "": needs to be unset`,
		}},
		{"bad series", func(e *eventsv1.Event) { e.Series = &eventsv1.EventSeries{Count: 1} }, []string{
			`series.count: Invalid value: "": should be at least 2`,
			"series.lastObservedTime: Required value",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := eventV1("a")
			tt.mutate(e)
			if diff := cmp.Diff(tt.want, errorStrings(EventsV1().Validate(e))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEventsV1ValidateUpdate(t *testing.T) {
	stored := func() *eventsv1.Event {
		e := eventV1("a")
		e.ResourceVersion = "1"
		return e
	}
	tests := []struct {
		name   string
		mutate func(*eventsv1.Event)
		want   []string
	}{
		{"unchanged", func(*eventsv1.Event) {}, nil},
		{"a series begins", func(e *eventsv1.Event) {
			e.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(eventTime.Add(time.Minute))}
		}, nil},
		{"labels change", func(e *eventsv1.Event) { e.Labels = nil }, nil},
		{"eventTime below a microsecond", func(e *eventsv1.Event) { e.EventTime = metav1.NewMicroTime(eventTime.Add(999)) }, nil},
		{"bad series", func(e *eventsv1.Event) {
			e.Series = &eventsv1.EventSeries{Count: 1, LastObservedTime: metav1.NewMicroTime(eventTime)}
		}, []string{
			`series.count: Invalid value: "": should be at least 2`,
		}},
		{"note", func(e *eventsv1.Event) { e.Note = "other" }, []string{
			`message: Invalid value: "other": field is immutable`,
		}},
		{"what it is about", func(e *eventsv1.Event) { e.Regarding.Name = "db"; e.Related = &corev1.ObjectReference{Name: "x"} }, []string{
			`involvedObject: Invalid value: {"kind":"Pod","namespace":"team","name":"db","uid":"u1","apiVersion":"v1","resourceVersion":"7","fieldPath":"spec"}: field is immutable`,
			`related: Invalid value: {"name":"x"}: field is immutable`,
		}},
		{"reporter and reason", func(e *eventsv1.Event) {
			e.ReportingController, e.ReportingInstance, e.Action, e.Reason, e.Type = "c", "i", "a", "r", "Warning"
		}, []string{
			`reason: Invalid value: "r": field is immutable`,
			`type: Invalid value: "Warning": field is immutable`,
			`action: Invalid value: "a": field is immutable`,
			`reportingController: Invalid value: "c": field is immutable`,
			`reportingInstance: Invalid value: "i": field is immutable`,
		}},
		{"eventTime", func(e *eventsv1.Event) { e.EventTime = metav1.NewMicroTime(eventTime.Add(time.Second)) }, []string{
			`eventTime: Invalid value: "2026-12-01T10:00:01.123456Z": field is immutable`,
		}},
		{"deprecated count", func(e *eventsv1.Event) { e.DeprecatedCount = 2 }, []string{
			"count: Invalid value: 2: field is immutable",
		}},
		{"reporter removed", func(e *eventsv1.Event) { e.ReportingInstance = "" }, []string{
			"reportingInstance: Required value",
			`reportingInstance: Invalid value: "": field is immutable`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := stored()
			tt.mutate(e)
			if diff := cmp.Diff(tt.want, errorStrings(EventsV1().ValidateUpdate(e, stored()))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}

	// An event written through core/v1 without an eventTime may be
	// updated through events.k8s.io/v1 by the looser rules it was made by.
	old := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: "team", ResourceVersion: "1"},
		Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: "team", Name: "web"}, Reason: "Pulled", DeprecatedCount: 1}
	upd := old.DeepCopy()
	upd.Labels = map[string]string{"seen": "yes"}
	if errs := EventsV1().ValidateUpdate(upd, old); len(errs) != 0 {
		t.Errorf("update of a core/v1 event: %v", errs)
	}
}
