package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/kplane/kplane/pkg/cache"
)

// eventLine is one watch event as kube-apiserver writes it: a JSON
// metav1.WatchEvent followed by a newline.
func eventLine(t testing.TB, typ watch.EventType, obj any) []byte {
	t.Helper()
	raw, err := utiljson.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	line, err := utiljson.Marshal(metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: raw}})
	if err != nil {
		t.Fatal(err)
	}
	return append(line, '\n')
}

// streamHandler writes lines as a chunked watch response, flushing after
// each, then holds the stream open until the client goes away when hold is
// set.
func streamHandler(lines [][]byte, hold bool) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Transfer-Encoding", "chunked")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush() // the API server sends the headers at once
		for _, l := range lines {
			_, _ = w.Write(l)
			w.(http.Flusher).Flush()
		}
		if hold {
			<-r.Context().Done()
		}
	}
}

func podWithRV(name, rv string) *corev1.Pod {
	p := testPod("ns1", name)
	p.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
	p.ResourceVersion = rv
	return p
}

func collect[T cache.Object](t testing.TB, w cache.Watch[T]) []cache.Event[T] {
	t.Helper()
	var evs []cache.Event[T]
	timeout := time.After(30 * time.Second) // a hang guard, not synchronisation
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return evs
			}
			evs = append(evs, ev)
		case <-timeout:
			t.Fatal("watch did not end")
		}
	}
}

func TestWatchDecodesEvents(t *testing.T) {
	bookmark := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{ResourceVersion: "12",
			Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}},
	}
	expired := apierrors.NewResourceExpired("too old resource version: 1 (5)").ErrStatus
	expired.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	lines := [][]byte{
		eventLine(t, watch.Added, podWithRV("a", "10")),
		eventLine(t, watch.Modified, podWithRV("a", "11")),
		eventLine(t, watch.Bookmark, bookmark),
		eventLine(t, watch.Deleted, podWithRV("a", "13")),
		eventLine(t, watch.Error, expired),
	}
	rec, c := newServer(t, streamHandler(lines, false))
	w, err := NewResource(c, Pods).Namespace("ns1").Watch(context.Background(), metav1.ListOptions{
		ResourceVersion: "9", AllowWatchBookmarks: true, SendInitialEvents: ptr.To(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, TimeoutSeconds: ptr.To[int64](60),
		LabelSelector: "app=web",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	got := collect(t, w)
	want := []cache.Event[*corev1.Pod]{
		{Type: watch.Added, Object: podWithRV("a", "10")},
		{Type: watch.Modified, Object: podWithRV("a", "11")},
		{Type: watch.Bookmark, Object: bookmark},
		{Type: watch.Deleted, Object: podWithRV("a", "13")},
		{Type: watch.Error, Status: &expired},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if !apierrors.IsResourceExpired(apierrors.FromObject(got[4].Status)) {
		t.Errorf("ERROR event status is not Expired: %+v", got[4].Status)
	}
	r := rec.last(t)
	if want := "allowWatchBookmarks=true&labelSelector=app%3Dweb&resourceVersion=9&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&timeoutSeconds=60&watch=true"; r.Query != want {
		t.Errorf("query = %s, want %s", r.Query, want)
	}
	if r.Path != "/api/v1/namespaces/ns1/pods" || r.Method != "GET" {
		t.Errorf("request = %s %s", r.Method, r.Path)
	}
}

// TestWatchRefused checks that a watch the server answers with an error
// status (410 for a compacted resourceVersion) is an error, not a stream.
func TestWatchRefused(t *testing.T) {
	_, c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		writeStatus(w, apierrors.NewResourceExpired("too old resource version: 1 (5)"))
	})
	w, err := NewResource(c, Pods).Watch(context.Background(), metav1.ListOptions{ResourceVersion: "1"})
	if err == nil {
		w.Stop()
		t.Fatal("watch succeeded")
	}
	var se *apierrors.StatusError
	if !errors.As(err, &se) || !apierrors.IsResourceExpired(err) || se.Status().Code != http.StatusGone {
		t.Errorf("error = %v (%T), want a 410 Expired StatusError", err, err)
	}
}

// TestWatchStop checks that Stop ends a watch the server keeps open, closes
// the channel, and (through goleak in TestMain) leaves no goroutine behind.
func TestWatchStop(t *testing.T) {
	serverDone := make(chan struct{})
	_, c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		defer close(serverDone)
		streamHandler([][]byte{eventLine(t, watch.Added, podWithRV("a", "1"))}, true)(w, r)
	})
	w, err := NewResource(c, Pods).Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ev := <-w.ResultChan()
	if ev.Type != watch.Added || ev.Object.Name != "a" {
		t.Fatalf("first event = %+v", ev)
	}
	w.Stop()
	w.Stop() // idempotent
	if _, ok := <-w.ResultChan(); ok {
		t.Error("ResultChan open after Stop")
	}
	<-serverDone // the server saw the connection go away
}

// TestWatchStopWithUnreadEvent checks that Stop does not wait for the
// consumer to read a pending event.
func TestWatchStopWithUnreadEvent(t *testing.T) {
	_, c := newServer(t, streamHandler([][]byte{
		eventLine(t, watch.Added, podWithRV("a", "1")),
		eventLine(t, watch.Added, podWithRV("b", "2")),
	}, true))
	w, err := NewResource(c, Pods).Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	<-w.ResultChan()
	w.Stop()
}

// TestWatchContextCancel checks that cancelling the watch's context ends it.
func TestWatchContextCancel(t *testing.T) {
	_, c := newServer(t, streamHandler(nil, true))
	ctx, cancel := context.WithCancel(context.Background())
	w, err := NewResource(c, Pods).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	cancel()
	if evs := collect(t, w); len(evs) != 0 {
		t.Errorf("events after cancel: %+v", evs)
	}
}

// TestWatchBadStream checks that bytes that are not watch events end the
// watch with an ERROR event, as client-go reports decoding failures.
func TestWatchBadStream(t *testing.T) {
	tests := []struct {
		name, stream string
		wantEvents   int // events before the error
	}{
		{"unknown type", `{"type":"UPSERTED","object":{}}` + "\n", 0},
		{"not JSON", "<html>oops</html>", 0},
		{"object of the wrong shape", `{"type":"ADDED","object":{"metadata":{"name":5}}}`, 0},
		{"missing object", `{"type":"ADDED"}`, 0},
		{"good then garbage", string(eventLine(t, watch.Added, podWithRV("a", "1"))) + "}{", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, c := newServer(t, streamHandler([][]byte{[]byte(tt.stream)}, false))
			w, err := NewResource(c, Pods).Watch(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			evs := collect(t, w)
			if len(evs) != tt.wantEvents+1 {
				t.Fatalf("got %d events, want %d then an error: %+v", len(evs), tt.wantEvents, evs)
			}
			last := evs[len(evs)-1]
			if last.Type != watch.Error || last.Status == nil || last.Status.Code != 500 ||
				!strings.Contains(last.Status.Message, "unable to decode an event from the watch stream") {
				t.Errorf("last event = %+v, want a decoding ERROR", last)
			}
		})
	}
}

// TestWatchTruncatedStream checks that a stream cut off mid-event (the
// server went away) just ends the watch.
func TestWatchTruncatedStream(t *testing.T) {
	line := eventLine(t, watch.Added, podWithRV("a", "1"))
	_, c := newServer(t, streamHandler([][]byte{line, line[:10]}, false))
	w, err := NewResource(c, Pods).Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	evs := collect(t, w)
	if len(evs) != 1 || evs[0].Type != watch.Added {
		t.Errorf("events = %+v, want one ADDED", evs)
	}
}

func FuzzWatchDecode(f *testing.F) {
	f.Add([]byte(`{"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"a"}}}` + "\n" + `{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"3"}}}`))
	f.Add([]byte(`{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}}`))
	f.Add([]byte(`{"type":"DELETED","object":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, stream []byte) {
		dec := json.NewDecoder(bytes.NewReader(stream))
		for range 100 {
			ev, err := decodeEvent[*corev1.Pod](dec)
			if err != nil {
				return
			}
			switch ev.Type {
			case watch.Error:
				if ev.Status == nil {
					t.Fatal("ERROR event without status")
				}
			case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
				if ev.Object == nil {
					t.Fatalf("%s event without object", ev.Type)
				}
			default:
				t.Fatalf("event of type %q accepted", ev.Type)
			}
		}
	})
}
