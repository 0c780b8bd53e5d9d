package apiserver

import (
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"

	"github.com/kplane/kplane/pkg/storage/cacher"
	"github.com/kplane/kplane/pkg/storage/memory"
)

// newCachedTestEnv serves through the watch cache, as kplane does over etcd.
func newCachedTestEnv(t *testing.T) *testEnv {
	t.Helper()
	clk := testclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	backend, err := memory.New(memory.Config{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	c, err := cacher.New(cacher.Config{Backend: backend, WindowSize: 5})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Backend: c, Clock: clk, Admission: noServiceAccounts})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		_ = c.Close()
		_ = backend.Close()
	})
	return &testEnv{t: t, clock: clk, server: s, http: hs}
}

func TestThroughWatchCache(t *testing.T) {
	e := newCachedTestEnv(t)
	e.mustCreate(podPath("default", ""), testPod("a", map[string]string{"app": "web"}), nil)

	w := e.watch(podPath("default", "") + "?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&labelSelector=" + url.QueryEscape("app=web"))
	w.expectEvent(t, "ADDED", "a")
	if bm := w.expectEvent(t, "BOOKMARK", ""); bm.Annotations["k8s.io/initial-events-end"] != "true" {
		t.Fatalf("bookmark %+v", bm)
	}
	e.do("PATCH", podPath("default", "a"), `{"metadata":{"labels":{"app":"db"}}}`, "Content-Type", "application/merge-patch+json").expect(t, 200, "")
	w.expectEvent(t, "DELETED", "a")

	rv := listRV(t, e, podPath("default", ""))
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h"} {
		e.mustCreate(podPath("default", ""), testPod(n, nil), nil)
	}
	var list struct {
		Items []struct{} `json:"items"`
	}
	e.do("GET", podPath("default", ""), nil).decode(t, &list)
	if len(list.Items) != 8 {
		t.Fatalf("consistent list through the cache: %d items", len(list.Items))
	}
	// A watch from before the cache's window either resumes exactly (the
	// cache may read older events from the backend) or is told to relist.
	old := e.watch(podPath("default", "") + "?watch=true&resourceVersion=" + rv)
	ev := old.next(t)
	switch ev.Type {
	case "ERROR":
		var st metav1.Status
		if err := json.Unmarshal(ev.Object, &st); err != nil || st.Code != 410 {
			t.Fatalf("error event %s", ev.Object)
		}
	case "ADDED":
		var obj metav1.PartialObjectMetadata
		if err := json.Unmarshal(ev.Object, &obj); err != nil || obj.Name != "b" {
			t.Fatalf("resumed with %s", ev.Object)
		}
	default:
		t.Fatalf("watch from before the window: %s %s", ev.Type, ev.Object)
	}
}
