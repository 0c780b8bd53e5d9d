package apiserver

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	eventsV1Path   = "/apis/events.k8s.io/v1/namespaces/default/events"
	eventsCorePath = "/api/v1/namespaces/default/events"
)

// testEventV1 is an event as client-go's events.k8s.io/v1 recorder writes it.
func testEventV1(name, pod string, at time.Time) *eventsv1.Event {
	return &eventsv1.Event{
		TypeMeta:            metav1.TypeMeta{APIVersion: "events.k8s.io/v1", Kind: "Event"},
		ObjectMeta:          metav1.ObjectMeta{Name: name},
		EventTime:           metav1.NewMicroTime(at),
		ReportingController: "default-scheduler",
		ReportingInstance:   "default-scheduler-node-1",
		Action:              "Binding",
		Reason:              "Scheduled",
		Regarding:           corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: "default", Name: pod},
		Note:                "Successfully assigned default/" + pod + " to node-1",
		Type:                corev1.EventTypeNormal,
	}
}

func TestEventsServedInTwoVersionsFromOneStore(t *testing.T) {
	e := newTestEnv(t)
	at := e.clock.Now().UTC().Truncate(time.Microsecond)

	var created eventsv1.Event
	e.mustCreate(eventsV1Path, testEventV1("web.1", "web", at), &created)
	if created.APIVersion != "events.k8s.io/v1" || created.Note == "" || created.UID == "" {
		t.Fatalf("created %+v", created)
	}

	// The same object through core/v1.
	var core corev1.Event
	r := e.do("GET", eventsCorePath+"/web.1", nil)
	r.expect(t, 200, "")
	r.decode(t, &core)
	if core.APIVersion != "v1" || core.UID != created.UID || core.ResourceVersion != created.ResourceVersion ||
		core.InvolvedObject.Name != "web" || core.Message != created.Note || core.ReportingController != "default-scheduler" ||
		core.ReportingInstance != "default-scheduler-node-1" || !core.EventTime.Time.Equal(at) || core.Count != 0 {
		t.Fatalf("core/v1 view: %s", r.body)
	}
	if !strings.Contains(string(r.body), `"reportingComponent":"default-scheduler"`) {
		t.Errorf("core/v1 JSON: %s", r.body)
	}

	// An update through events.k8s.io/v1 starts a series; core/v1 sees it.
	created.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(at.Add(time.Minute))}
	r = e.do("PUT", eventsV1Path+"/web.1", &created)
	r.expect(t, 200, "")
	r = e.do("GET", eventsCorePath+"/web.1", nil)
	r.decode(t, &core)
	if core.Series == nil || core.Series.Count != 2 {
		t.Fatalf("core/v1 after update: %s", r.body)
	}

	// An event written by a core/v1 recorder reads through events.k8s.io/v1.
	old := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "db.1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "db"},
		Reason:         "Pulled", Message: "image pulled", Type: corev1.EventTypeNormal,
		Source:         corev1.EventSource{Component: "kubelet", Host: "node-2"},
		FirstTimestamp: metav1.NewTime(at.Truncate(time.Second)), LastTimestamp: metav1.NewTime(at.Truncate(time.Second)), Count: 3,
	}
	e.mustCreate(eventsCorePath, old, nil)
	var v1 eventsv1.Event
	r = e.do("GET", eventsV1Path+"/db.1", nil)
	r.expect(t, 200, "")
	r.decode(t, &v1)
	if v1.APIVersion != "events.k8s.io/v1" || v1.Regarding.Name != "db" || v1.Note != "image pulled" ||
		v1.DeprecatedSource.Component != "kubelet" || v1.DeprecatedCount != 3 || v1.DeprecatedFirstTimestamp.IsZero() {
		t.Fatalf("events.k8s.io/v1 view: %s", r.body)
	}
	// Updated through events.k8s.io/v1 by the rules it was made by; the
	// note is immutable, with the core/v1 path Kubernetes reports.
	v1.Labels = map[string]string{"seen": "yes"}
	r = e.do("PUT", eventsV1Path+"/db.1", &v1)
	r.expect(t, 200, "")
	r.decode(t, &v1)
	v1.Note = "changed"
	r = e.do("PUT", eventsV1Path+"/db.1", &v1)
	r.expect(t, 422, metav1.StatusReasonInvalid)
	if !strings.Contains(string(r.body), "message: Invalid value") {
		t.Errorf("immutable note: %s", r.body)
	}

	// A list holds both, in events.k8s.io/v1.
	var list eventsv1.EventList
	r = e.do("GET", eventsV1Path, nil)
	r.decode(t, &list)
	if list.Kind != "EventList" || list.APIVersion != "events.k8s.io/v1" || len(list.Items) != 2 || list.ResourceVersion == "" {
		t.Fatalf("list: %s", r.body)
	}

	// Deleted through one version, gone from the other.
	e.do("DELETE", eventsCorePath+"/web.1", nil).expect(t, 200, "")
	e.do("GET", eventsV1Path+"/web.1", nil).expect(t, 404, metav1.StatusReasonNotFound)
}

func TestEventsV1Validation(t *testing.T) {
	e := newTestEnv(t)
	at := e.clock.Now()
	for _, tc := range []struct {
		name   string
		mutate func(*eventsv1.Event)
		want   string
	}{
		{"no eventTime", func(ev *eventsv1.Event) { ev.EventTime = metav1.MicroTime{} }, "eventTime: Required value"},
		{"no reporter", func(ev *eventsv1.Event) { ev.ReportingController = "" }, "reportingController: Required value"},
		{"no instance", func(ev *eventsv1.Event) { ev.ReportingInstance = "" }, "reportingInstance: Required value"},
		{"no action", func(ev *eventsv1.Event) { ev.Action = "" }, "action: Required value"},
		{"long note", func(ev *eventsv1.Event) { ev.Note = strings.Repeat("x", 1025) }, "can have at most 1024 characters"},
		{"bad type", func(ev *eventsv1.Event) { ev.Type = "Info" }, "has invalid value: Info"},
		{"deprecated count", func(ev *eventsv1.Event) { ev.DeprecatedCount = 2 }, "count: Invalid value: \\\"\\\": needs to be unset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := testEventV1("bad", "web", at)
			tc.mutate(ev)
			r := e.do("POST", eventsV1Path, ev)
			r.expect(t, 422, metav1.StatusReasonInvalid)
			if !strings.Contains(string(r.body), tc.want) {
				t.Errorf("got %s, want %q", r.body, tc.want)
			}
		})
	}
	// core/v1 keeps its looser rules for the same store.
	e.mustCreate(eventsCorePath, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "legacy"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web"},
		Reason:         "Started",
	}, nil)
}

func TestEventsV1FieldSelectors(t *testing.T) {
	e := newTestEnv(t)
	at := e.clock.Now()
	e.mustCreate(eventsV1Path, testEventV1("web.1", "web", at), nil)
	warn := testEventV1("db.1", "db", at)
	warn.Type, warn.Reason, warn.ReportingController = corev1.EventTypeWarning, "FailedScheduling", "other-scheduler"
	e.mustCreate(eventsV1Path, warn, nil)
	e.mustCreate(eventsCorePath, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "web.2"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web"},
		Reason:         "Pulled", Type: corev1.EventTypeNormal, Source: corev1.EventSource{Component: "kubelet"},
	}, nil)

	names := func(t *testing.T, path, selector string) string {
		t.Helper()
		r := e.do("GET", path+"?fieldSelector="+url.QueryEscape(selector), nil)
		r.expect(t, 200, "")
		var list metav1.PartialObjectMetadataList
		r.decode(t, &list)
		var out []string
		for _, it := range list.Items {
			out = append(out, it.Name)
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct{ selector, want string }{
		{"regarding.name=web", "web.1,web.2"},
		{"regarding.kind=Pod,regarding.namespace=default,regarding.name=db", "db.1"},
		{"type=Warning", "db.1"},
		{"reason=Pulled", "web.2"},
		{"reportingController=default-scheduler", "web.1"},
		{"source=kubelet", "web.2"},
		{"source=other-scheduler", "db.1"},
		{"metadata.name=web.1", "web.1"},
		{"regarding.name!=web", "db.1"},
	} {
		t.Run(tc.selector, func(t *testing.T) {
			if got := names(t, eventsV1Path, tc.selector); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	// Each version takes its own field names only, as kube-apiserver does.
	e.do("GET", eventsV1Path+"?fieldSelector=involvedObject.name%3Dweb", nil).expect(t, 400, metav1.StatusReasonBadRequest)
	e.do("GET", eventsCorePath+"?fieldSelector=regarding.name%3Dweb", nil).expect(t, 400, metav1.StatusReasonBadRequest)
	if got := names(t, eventsCorePath, "involvedObject.name=web"); got != "web.1,web.2" {
		t.Errorf("core/v1 selector: %q", got)
	}
}

func TestEventsV1Watch(t *testing.T) {
	e := newTestEnv(t)
	at := e.clock.Now()
	rv := listRV(t, e, eventsV1Path)
	all := e.watch(eventsV1Path + "?watch=true&resourceVersion=" + rv)
	warnings := e.watch(eventsV1Path + "?watch=true&resourceVersion=" + rv + "&fieldSelector=" + url.QueryEscape("type=Warning"))

	// Written through core/v1, watched through events.k8s.io/v1.
	e.mustCreate(eventsCorePath, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "web.1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web"},
		Reason:         "BackOff", Message: "back-off restarting", Type: corev1.EventTypeWarning,
	}, nil)
	e.mustCreate(eventsV1Path, testEventV1("web.2", "web", at), nil)

	for _, w := range []*watchStream{all, warnings} {
		ev := w.next(t)
		var got eventsv1.Event
		if err := json.Unmarshal(ev.Object, &got); err != nil {
			t.Fatal(err)
		}
		if ev.Type != "ADDED" || got.APIVersion != "events.k8s.io/v1" || got.Kind != "Event" || got.Name != "web.1" ||
			got.Regarding.Name != "web" || got.Note != "back-off restarting" {
			t.Fatalf("event %s %s", ev.Type, ev.Object)
		}
	}
	all.expectEvent(t, "ADDED", "web.2")
	e.do("DELETE", eventsV1Path+"/web.1", nil).expect(t, 200, "")
	all.expectEvent(t, "DELETED", "web.1")
	warnings.expectEvent(t, "DELETED", "web.1")
}

func TestEventsV1Table(t *testing.T) {
	e := newTestEnv(t)
	e.mustCreate(eventsV1Path, testEventV1("web.1", "web", e.clock.Now()), nil)
	e.clock.Step(90 * time.Second)
	r := e.do("GET", eventsV1Path, nil, "Accept", kubectlGetAccept)
	r.expect(t, 200, "")
	var tb metav1.Table
	r.decode(t, &tb)
	if got := columnNames(&tb); got != "Last Seen Type Reason Object Message" {
		t.Errorf("columns %q", got)
	}
	if len(tb.Rows) != 1 {
		t.Fatalf("rows %+v", tb.Rows)
	}
	cells := tb.Rows[0].Cells
	want := []any{"90s", "Normal", "Scheduled", "pod/web", "", "default-scheduler, default-scheduler-node-1",
		"Successfully assigned default/web to node-1", "90s", float64(1), "web.1"}
	if len(cells) != len(want) {
		t.Fatalf("cells %v", cells)
	}
	for i := range want {
		if cells[i] != want[i] {
			t.Errorf("cell %d (%s) = %#v, want %#v", i, tb.ColumnDefinitions[i].Name, cells[i], want[i])
		}
	}
}

func TestEventsV1Discovery(t *testing.T) {
	e := newTestEnv(t)
	var list metav1.APIResourceList
	r := e.do("GET", "/apis/events.k8s.io/v1", nil)
	r.expect(t, 200, "")
	r.decode(t, &list)
	if len(list.APIResources) != 1 {
		t.Fatalf("resources %s", r.body)
	}
	res := list.APIResources[0]
	if res.Name != "events" || res.Kind != "Event" || !res.Namespaced || len(res.ShortNames) != 1 || res.ShortNames[0] != "ev" {
		t.Fatalf("resource %+v", res)
	}
}
