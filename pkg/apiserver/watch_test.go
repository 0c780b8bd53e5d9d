package apiserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/storage/memory"
)

// rawEvent is a decoded watch line.
type rawEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// watchStream is an open watch whose events arrive on events; it closes
// when the server ends the stream.
type watchStream struct {
	events <-chan rawEvent
	code   int
}

// eventWait bounds how long a test waits for an event the server must send;
// reaching it fails the test, it never paces it.
const eventWait = 10 * time.Second

func (e *testEnv) watch(path string, headers ...string) *watchStream {
	e.t.Helper()
	resp, events := streamEvents(e, path, headers, func(body io.Reader) func() (rawEvent, error) {
		dec := json.NewDecoder(body)
		return func() (rawEvent, error) {
			var ev rawEvent
			err := dec.Decode(&ev)
			return ev, err
		}
	})
	return &watchStream{events: events, code: resp.StatusCode}
}

// streamEvents opens a watch of path with headers (name, value pairs) and
// sends what the function decode returns reads of the body on the channel
// returned, until it fails (closing the channel) or the test ends.
func streamEvents[T any](e *testEnv, path string, headers []string, decode func(io.Reader) func() (T, error)) (*http.Response, <-chan T) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", e.http.URL+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := e.http.Client().Do(req)
	if err != nil {
		cancel()
		e.t.Fatal(err)
	}
	ch := make(chan T)
	next := decode(resp.Body)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(ch)
		for {
			ev, err := next()
			if err != nil {
				return
			}
			select {
			case ch <- ev:
			case <-ctx.Done():
				return
			}
		}
	})
	e.t.Cleanup(func() {
		cancel()
		resp.Body.Close()
		wg.Wait()
	})
	return resp, ch
}

// next returns the next event, failing the test if none comes.
func (w *watchStream) next(t testing.TB) rawEvent {
	t.Helper()
	return nextOn(t, w.events)
}

// nextOn returns the next value of events, failing the test if none comes
// or events is closed.
func nextOn[T any](t testing.TB, events <-chan T) T {
	t.Helper()
	select {
	case ev, ok := <-events:
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(eventWait):
	}
	t.Fatal("no watch event")
	var zero T
	return zero
}

// expectEvent reads the next event and checks its type and object name.
func (w *watchStream) expectEvent(t testing.TB, typ, name string) metav1.PartialObjectMetadata {
	t.Helper()
	ev := w.next(t)
	var obj metav1.PartialObjectMetadata
	if err := json.Unmarshal(ev.Object, &obj); err != nil {
		t.Fatal(err)
	}
	if ev.Type != typ || (name != "" && obj.Name != name) {
		t.Fatalf("got %s %s, want %s %s: %s", ev.Type, obj.Name, typ, name, ev.Object)
	}
	return obj
}

// expectClosed waits for the server to end the stream.
func (w *watchStream) expectClosed(t testing.TB) {
	t.Helper()
	select {
	case ev, ok := <-w.events:
		if ok {
			t.Fatalf("unexpected event %s %s", ev.Type, ev.Object)
		}
	case <-time.After(eventWait):
		t.Fatal("watch not closed")
	}
}

func listRV(t testing.TB, e *testEnv, path string) string {
	t.Helper()
	var list metav1.List
	e.do("GET", path, nil).decode(t, &list)
	return list.ResourceVersion
}

func TestWatchStreamsChanges(t *testing.T) {
	e := newTestEnv(t)
	rv := listRV(t, e, podPath("default", ""))
	w := e.watch(podPath("default", "") + "?watch=true&resourceVersion=" + rv)
	var p corev1.Pod
	e.mustCreate(podPath("default", ""), testPod("p", nil), &p)
	added := w.expectEvent(t, "ADDED", "p")
	if added.Kind != "Pod" || added.APIVersion != "v1" || added.ResourceVersion != p.ResourceVersion {
		t.Fatalf("added %+v", added)
	}
	e.do("PATCH", podPath("default", "p"), `{"metadata":{"labels":{"a":"b"}}}`, "Content-Type", "application/merge-patch+json").expect(t, 200, "")
	w.expectEvent(t, "MODIFIED", "p")
	e.do("DELETE", podPath("default", "p"), nil).expect(t, 200, "")
	w.expectEvent(t, "DELETED", "p")
}

func TestWatchLegacyPathAndName(t *testing.T) {
	e := newTestEnv(t)
	rv := listRV(t, e, podPath("default", ""))
	w := e.watch("/api/v1/watch/namespaces/default/pods/b?resourceVersion=" + rv)
	e.mustCreate(podPath("default", ""), testPod("a", nil), nil)
	e.mustCreate(podPath("default", ""), testPod("b", nil), nil)
	w.expectEvent(t, "ADDED", "b")
}

func TestWatchSelectorSeesObjectsLeaveAndReturn(t *testing.T) {
	e := newTestEnv(t)
	rv := listRV(t, e, podPath("default", ""))
	w := e.watch(podPath("default", "") + "?watch=1&labelSelector=" + url.QueryEscape("app=web") + "&resourceVersion=" + rv)
	e.mustCreate(podPath("default", ""), testPod("p", map[string]string{"app": "web"}), nil)
	w.expectEvent(t, "ADDED", "p")
	patch := func(app string) {
		e.do("PATCH", podPath("default", "p"), `{"metadata":{"labels":{"app":"`+app+`"}}}`, "Content-Type", "application/merge-patch+json").expect(t, 200, "")
	}
	patch("db")
	w.expectEvent(t, "DELETED", "p")
	patch("db2")
	patch("web")
	w.expectEvent(t, "ADDED", "p")
}

func TestWatchTooOldResourceVersionIsGone(t *testing.T) {
	e := newTestEnvWithStorage(t, memory.Config{HistoryRevisions: 3})
	rv := listRV(t, e, podPath("default", ""))
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		e.mustCreate(podPath("default", ""), testPod(n, nil), nil)
	}
	w := e.watch(podPath("default", "") + "?watch=true&resourceVersion=" + rv)
	if w.code != 200 {
		t.Fatalf("code %d", w.code)
	}
	ev := w.next(t)
	var st metav1.Status
	if err := json.Unmarshal(ev.Object, &st); err != nil {
		t.Fatal(err)
	}
	if ev.Type != "ERROR" || st.Code != 410 || st.Reason != metav1.StatusReasonExpired || st.Kind != "Status" {
		t.Fatalf("got %s %+v", ev.Type, st)
	}
	w.expectClosed(t)
}

func TestWatchList(t *testing.T) {
	e := newTestEnv(t)
	e.mustCreate(podPath("default", ""), testPod("a", nil), nil)
	e.mustCreate(podPath("default", ""), testPod("b", nil), nil)
	w := e.watch(podPath("default", "") + "?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true")
	seen := map[string]bool{}
	seen[w.expectEvent(t, "ADDED", "").Name] = true
	seen[w.expectEvent(t, "ADDED", "").Name] = true
	if !seen["a"] || !seen["b"] {
		t.Fatalf("initial events %v", seen)
	}
	bm := w.expectEvent(t, "BOOKMARK", "")
	if bm.Annotations[metav1.InitialEventsAnnotationKey] != "true" || bm.ResourceVersion == "" || bm.Kind != "Pod" {
		t.Fatalf("bookmark %+v", bm)
	}
	e.mustCreate(podPath("default", ""), testPod("c", nil), nil)
	w.expectEvent(t, "ADDED", "c")
}

func TestWatchListValidation(t *testing.T) {
	e := newTestEnv(t)
	for _, q := range []string{
		"?watch=true&sendInitialEvents=true&allowWatchBookmarks=true",
		"?watch=true&resourceVersionMatch=NotOlderThan",
		"?watch=true&sendInitialEvents=true&resourceVersionMatch=Exact&allowWatchBookmarks=true",
	} {
		e.do("GET", podPath("default", "")+q, nil).expect(t, 422, metav1.StatusReasonInvalid)
	}
}

// TestWatchListWithoutBookmarks checks that, as in kube-apiserver 1.37
// (whose ListOptions validation no longer asks for allowWatchBookmarks),
// sendInitialEvents without bookmarks streams the current state and then
// the changes, with no BOOKMARK at all.
func TestWatchListWithoutBookmarks(t *testing.T) {
	e := newTestEnv(t)
	e.mustCreate(podPath("default", ""), testPod("a", nil), nil)
	w := e.watch(podPath("default", "") + "?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan")
	w.expectEvent(t, "ADDED", "a")
	e.mustCreate(podPath("default", ""), testPod("b", nil), nil)
	w.expectEvent(t, "ADDED", "b")
}

func TestWatchBookmarksAndTimeout(t *testing.T) {
	e := newTestEnv(t)
	rv := listRV(t, e, podPath("default", ""))
	w := e.watch(podPath("default", "") + "?watch=true&allowWatchBookmarks=true&timeoutSeconds=600&resourceVersion=" + rv)
	// Make sure the stream is established before time moves.
	e.mustCreate(podPath("default", ""), testPod("a", nil), nil)
	w.expectEvent(t, "ADDED", "a")
	// Bookmarks come about once a minute on the backend's clock.
	e.clock.Step(61 * time.Second)
	bm := w.expectEvent(t, "BOOKMARK", "")
	if bm.ResourceVersion == "" {
		t.Fatalf("bookmark without resourceVersion: %+v", bm)
	}
	// The watch ends after timeoutSeconds.
	e.clock.Step(600 * time.Second)
	for {
		select {
		case ev, ok := <-w.events:
			if !ok {
				return
			}
			if ev.Type != "BOOKMARK" {
				t.Fatalf("unexpected %s after timeout", ev.Type)
			}
		case <-time.After(eventWait):
			t.Fatal("watch did not end after timeoutSeconds")
		}
	}
}

func TestWatchWithoutBookmarksGetsNone(t *testing.T) {
	e := newTestEnv(t)
	rv := listRV(t, e, podPath("default", ""))
	w := e.watch(podPath("default", "") + "?watch=true&timeoutSeconds=600&resourceVersion=" + rv)
	e.mustCreate(podPath("default", ""), testPod("a", nil), nil)
	w.expectEvent(t, "ADDED", "a")
	e.clock.Step(61 * time.Second)
	e.mustCreate(podPath("default", ""), testPod("b", nil), nil)
	// The next event is the create, not a bookmark.
	w.expectEvent(t, "ADDED", "b")
}
