package storagetest

import (
	"context"
	"net/http"
	"reflect"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kplane/kplane/pkg/storage"
)

var watchTests = []test{
	{name: "WatchFromRevision", run: testWatchFromRevision},
	{name: "WatchSingleKey", run: testWatchSingleKey},
	{name: "WatchPrefix", run: testWatchPrefix},
	{name: "WatchInitialState", run: testWatchInitialState},
	{name: "WatchSendInitialEvents", run: testWatchSendInitialEvents},
	{name: "WatchPredicate", run: testWatchPredicate},
	{name: "WatchFieldSelector", run: testWatchFieldSelector},
	{name: "WatchProgressNotify", run: testWatchProgressNotify},
	{name: "WatchStop", run: testWatchStop},
	{name: "WatchSharedEvents", run: testWatchShared},
}

// nextEvent returns the next event of w, failing t when the channel closes
// or nothing comes within eventTimeout. It checks that Raw, when set,
// decodes to Object.
func nextEvent(t testing.TB, w storage.Watcher) storage.Event {
	t.Helper()
	timer := time.NewTimer(eventTimeout)
	defer timer.Stop()
	select {
	case e, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch channel closed, want an event")
		}
		if e.Raw != nil && e.Object != nil {
			into := reflect.New(reflect.TypeOf(e.Object).Elem()).Interface().(runtime.Object)
			if err := (storage.JSONCodec{}).Decode(e.Raw, into); err != nil {
				t.Fatalf("event Raw does not decode: %v", err)
			}
			diff(t, "event Raw decoded vs Object", e.Object, into)
		}
		return e
	case <-timer.C:
		t.Fatalf("no watch event within %v", eventTimeout)
	}
	return storage.Event{}
}

// expectClosed fails t unless w's channel closes with no further event
// (an Error event is allowed first when allowError).
func expectClosed(t testing.TB, w storage.Watcher) {
	t.Helper()
	timer := time.NewTimer(eventTimeout)
	defer timer.Stop()
	select {
	case e, ok := <-w.ResultChan():
		if ok {
			t.Fatalf("got %s event, want the watch closed", e.Type)
		}
	case <-timer.C:
		t.Fatalf("watch channel not closed within %v", eventTimeout)
	}
}

// expectWatchExpired fails t unless a watch of key from rv is refused as
// expired: Watch fails with ErrCodeExpired, or its first event is an Error
// with a 410 status and the channel then closes.
func expectWatchExpired(t testing.TB, s storage.Interface, key, rv string) {
	t.Helper()
	w, err := s.Watch(context.Background(), key, storage.ListOptions{Recursive: true, ResourceVersion: rv})
	if err != nil {
		wantCode(t, err, storage.ErrCodeExpired, "Watch from a compacted revision")
		return
	}
	defer w.Stop()
	e := nextEvent(t, w)
	st, ok := e.Object.(*metav1.Status)
	if e.Type != watch.Error || !ok || st.Code != http.StatusGone {
		t.Fatalf("watch from a compacted revision got %s %v, want an Error event with code 410", e.Type, e.Object)
	}
	expectClosed(t, w)
}

func rvOfString(obj runtime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return "<no metadata>"
	}
	return m.GetResourceVersion()
}

// evSummary is what the suite compares of an event.
type evSummary struct {
	Type  watch.EventType
	Name  string // namespace/name
	Value string
	RV    string
	Prev  string // value of PrevObject
}

func summarize(e storage.Event) evSummary {
	s := evSummary{Type: e.Type}
	if cm, ok := e.Object.(*corev1.ConfigMap); ok {
		s.Name, s.Value, s.RV = cm.Namespace+"/"+cm.Name, cm.Data["v"], cm.ResourceVersion
	}
	if cm, ok := e.PrevObject.(*corev1.ConfigMap); ok && cm != nil {
		s.Prev = cm.Data["v"]
	}
	return s
}

func watchOpen(t testing.TB, s storage.Interface, key string, opts storage.ListOptions) storage.Watcher {
	t.Helper()
	w, err := s.Watch(context.Background(), key, opts)
	if err != nil {
		t.Fatalf("Watch %s: %v", key, err)
	}
	t.Cleanup(w.Stop)
	return w
}

func testWatchFromRevision(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	create(t, s, newCM("ns", "a", "1", nil))
	start := currentRev(t, b)
	cb := create(t, s, newCM("ns", "b", "1", nil))
	ua := update(t, s, "ns", "a", "2")
	db := del(t, s, "ns", "b")
	delRev := currentRev(t, b)
	w := watchOpen(t, s, "/configmaps", storage.ListOptions{Recursive: true, ResourceVersion: rvString(start)})
	want := []evSummary{
		{watch.Added, "ns/b", "1", cb.ResourceVersion, ""},
		{watch.Modified, "ns/a", "2", ua.ResourceVersion, "1"},
		{watch.Deleted, "ns/b", "1", rvString(delRev), "1"},
	}
	var got []evSummary
	var del storage.Event
	for range want {
		e := nextEvent(t, w)
		got = append(got, summarize(e))
		if e.Type == watch.Deleted {
			del = e
		}
	}
	diff(t, "replayed events", want, got)
	if del.PrevObject == nil {
		t.Error("Deleted event has no PrevObject")
	} else if rvOfString(del.PrevObject) != cb.ResourceVersion {
		t.Errorf("Deleted PrevObject resourceVersion %s, want the last state's %s", rvOfString(del.PrevObject), cb.ResourceVersion)
	}
	if db.ResourceVersion != rvString(delRev) {
		t.Errorf("Delete returned resourceVersion %s, want the delete's revision %d", db.ResourceVersion, delRev)
	}
	// Live changes follow the replay.
	ua3 := update(t, s, "ns", "a", "3")
	diff(t, "live event", evSummary{watch.Modified, "ns/a", "3", ua3.ResourceVersion, "2"}, summarize(nextEvent(t, w)))
}

func testWatchSingleKey(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	create(t, s, newCM("ns", "a", "1", nil))
	start := currentRev(t, b)
	w := watchOpen(t, s, cmKey("ns", "a"), storage.ListOptions{ResourceVersion: rvString(start)})
	create(t, s, newCM("ns", "a2", "1", nil))
	create(t, s, newCM("ns", "b", "1", nil))
	u := update(t, s, "ns", "a", "2")
	diff(t, "single key event", evSummary{watch.Modified, "ns/a", "2", u.ResourceVersion, "1"}, summarize(nextEvent(t, w)))
}

func testWatchPrefix(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	start := currentRev(t, b)
	w := watchOpen(t, s, "/configmaps/ns", storage.ListOptions{Recursive: true, ResourceVersion: rvString(start)})
	create(t, s, newCM("ns2", "a", "1", nil))
	create(t, s, newCM("n", "a", "1", nil))
	c := create(t, s, newCM("ns", "a", "1", nil))
	diff(t, "prefix event", evSummary{watch.Added, "ns/a", "1", c.ResourceVersion, ""}, summarize(nextEvent(t, w)))
}

func testWatchInitialState(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	a := create(t, s, newCM("ns", "a", "1", nil))
	bb := create(t, s, newCM("ns", "b", "1", nil))
	create(t, s, newCM("other", "x", "1", nil))
	for _, rv := range []string{"", "0"} {
		t.Run("rv="+rv, func(t *testing.T) {
			w := watchOpen(t, s, "/configmaps/ns", storage.ListOptions{Recursive: true, ResourceVersion: rv})
			got := []evSummary{summarize(nextEvent(t, w)), summarize(nextEvent(t, w))}
			sort.Slice(got, func(i, j int) bool { return got[i].Name < got[j].Name })
			diff(t, "initial state", []evSummary{
				{watch.Added, "ns/a", "1", a.ResourceVersion, ""},
				{watch.Added, "ns/b", "1", bb.ResourceVersion, ""},
			}, got)
			c := create(t, s, newCM("ns", "c-"+rv, "1", nil))
			diff(t, "change after the initial state", evSummary{watch.Added, "ns/c-" + rv, "1", c.ResourceVersion, ""}, summarize(nextEvent(t, w)))
			del(t, s, "ns", "c-"+rv)
		})
	}
}

func testWatchSendInitialEvents(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	a := create(t, s, newCM("ns", "a", "1", map[string]string{"app": "web"}))
	create(t, s, newCM("ns", "b", "1", map[string]string{"app": "db"}))
	c := create(t, s, newCM("ns", "c", "1", map[string]string{"app": "web"}))
	snap := currentRev(t, b)
	yes := true
	w := watchOpen(t, s, "/configmaps/ns", storage.ListOptions{
		Recursive:            true,
		SendInitialEvents:    &yes,
		ProgressNotify:       true,
		ResourceVersion:      "",
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		Predicate:            storage.Predicate{Label: labels.SelectorFromSet(labels.Set{"app": "web"})},
	})
	got := []evSummary{summarize(nextEvent(t, w)), summarize(nextEvent(t, w))}
	sort.Slice(got, func(i, j int) bool { return got[i].Name < got[j].Name })
	diff(t, "initial events", []evSummary{
		{watch.Added, "ns/a", "1", a.ResourceVersion, ""},
		{watch.Added, "ns/c", "1", c.ResourceVersion, ""},
	}, got)
	e := nextEvent(t, w)
	if e.Type != watch.Bookmark {
		t.Fatalf("after the initial events got %s, want BOOKMARK", e.Type)
	}
	m, err := meta.Accessor(e.Object)
	if err != nil {
		t.Fatal(err)
	}
	if m.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
		t.Errorf("initial events bookmark annotations %v, want %s=true", m.GetAnnotations(), metav1.InitialEventsAnnotationKey)
	}
	if bm := rvOf(t, e.Object); bm < snap {
		t.Errorf("initial events bookmark at %d, before the state it follows (%d)", bm, snap)
	}
	d := create(t, s, newCM("ns", "d", "1", map[string]string{"app": "web"}))
	for {
		e := nextEvent(t, w)
		if e.Type == watch.Bookmark {
			continue // a progress bookmark may come at any time
		}
		diff(t, "change after the initial events", evSummary{watch.Added, "ns/d", "1", d.ResourceVersion, ""}, summarize(e))
		break
	}
}

func testWatchPredicate(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	web := map[string]string{"app": "web"}
	db := map[string]string{"app": "db"}
	start := currentRev(t, b)
	w := watchOpen(t, s, "/configmaps/ns", storage.ListOptions{
		Recursive:       true,
		ResourceVersion: rvString(start),
		Predicate:       storage.Predicate{Label: labels.SelectorFromSet(labels.Set{"app": "web"})},
	})
	setLabels := func(l map[string]string) func(*corev1.ConfigMap) {
		return func(cm *corev1.ConfigMap) { cm.Labels = l }
	}
	c1 := create(t, s, newCM("ns", "a", "1", web))
	create(t, s, newCM("ns", "b", "1", db))
	u1 := updateFn(t, s, "ns", "a", setLabels(db))                               // stops matching
	updateFn(t, s, "ns", "a", func(cm *corev1.ConfigMap) { cm.Data["v"] = "2" }) // not matching before or after
	u3 := updateFn(t, s, "ns", "a", setLabels(web))                              // starts matching
	u4 := update(t, s, "ns", "a", "3")                                           // still matching
	updateFn(t, s, "ns", "b", func(cm *corev1.ConfigMap) { cm.Data["v"] = "2" })
	d := del(t, s, "ns", "a")
	_ = d
	delRev := currentRev(t, b)
	sentinel := create(t, s, newCM("ns", "z", "1", web))
	want := []evSummary{
		{watch.Added, "ns/a", "1", c1.ResourceVersion, ""},
		{watch.Deleted, "ns/a", "1", u1.ResourceVersion, "1"},
		{watch.Added, "ns/a", "2", u3.ResourceVersion, ""},
		{watch.Modified, "ns/a", "3", u4.ResourceVersion, "2"},
		{watch.Deleted, "ns/a", "3", rvString(delRev), "3"},
		{watch.Added, "ns/z", "1", sentinel.ResourceVersion, ""},
	}
	var got []evSummary
	for range want {
		got = append(got, summarize(nextEvent(t, w)))
	}
	diff(t, "filtered watch", want, got)
}

func testWatchProgressNotify(t *testing.T, b storage.Backend) {
	pr, ok := b.(ProgressRequester)
	if !ok {
		t.Skipf("%T does not implement storagetest.ProgressRequester", b)
	}
	s := configMaps(t, b)
	start := currentRev(t, b)
	w := watchOpen(t, s, "/configmaps/ns", storage.ListOptions{Recursive: true, ResourceVersion: rvString(start), ProgressNotify: true})
	// A change the watch does not cover still moves its bookmarks.
	create(t, s, newCM("other", "a", "1", nil))
	rev := currentRev(t, b)
	if err := pr.RequestWatchProgress(context.Background()); err != nil {
		t.Fatal(err)
	}
	for {
		e := nextEvent(t, w)
		if e.Type != watch.Bookmark {
			t.Fatalf("got %s, want only bookmarks", e.Type)
		}
		if rvOf(t, e.Object) < rev {
			continue // an earlier periodic bookmark
		}
		want := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rvString(rev)}}
		diff(t, "bookmark object", runtime.Object(want), e.Object)
		break
	}
	// Bookmarks never run ahead of events.
	c := create(t, s, newCM("ns", "a", "1", nil))
	for {
		e := nextEvent(t, w)
		if e.Type == watch.Bookmark {
			if rvOf(t, e.Object) >= rvOf(t, c) {
				t.Fatalf("bookmark at %s before the event at %s", rvOfString(e.Object), c.ResourceVersion)
			}
			continue
		}
		diff(t, "event after a bookmark", evSummary{watch.Added, "ns/a", "1", c.ResourceVersion, ""}, summarize(e))
		break
	}
}

func testWatchStop(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	w, err := s.Watch(context.Background(), "/configmaps", storage.ListOptions{Recursive: true, ResourceVersion: rvString(currentRev(t, b))})
	if err != nil {
		t.Fatal(err)
	}
	create(t, s, newCM("ns", "a", "1", nil))
	w.Stop()
	w.Stop()
	// Stop may race with the pending event; after it the channel closes.
	timer := time.NewTimer(eventTimeout)
	defer timer.Stop()
	for done := false; !done; {
		select {
		case _, ok := <-w.ResultChan():
			done = !ok
		case <-timer.C:
			t.Fatal("channel not closed after Stop")
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	w2, err := s.Watch(ctx, "/configmaps", storage.ListOptions{Recursive: true, ResourceVersion: rvString(currentRev(t, b))})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	cancel()
	expectClosed(t, w2)
}

func testWatchShared(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	start := rvString(currentRev(t, b))
	var ws []storage.Watcher
	for range 3 {
		ws = append(ws, watchOpen(t, s, "/configmaps", storage.ListOptions{Recursive: true, ResourceVersion: start}))
	}
	create(t, s, newCM("ns", "a", "1", nil))
	update(t, s, "ns", "a", "2")
	del(t, s, "ns", "a")
	var first []evSummary
	for i, w := range ws {
		var got []evSummary
		for range 3 {
			got = append(got, summarize(nextEvent(t, w)))
		}
		if i == 0 {
			first = got
			continue
		}
		diff(t, "watchers of the same changes", first, got)
	}
}

func testWatchFieldSelector(t *testing.T, b storage.Backend) {
	ps := pods(t, b)
	ctx := context.Background()
	start := currentRev(t, b)
	w := watchOpen(t, ps, "/pods", storage.ListOptions{
		Recursive:       true,
		ResourceVersion: rvString(start),
		Predicate:       storage.Predicate{Field: fields.OneTermEqualSelector("spec.nodeName", "node1"), GetAttrs: podAttrs},
	})
	if err := ps.Create(ctx, podKey("ns", "p"), newPod("ns", "p", "", nil), &corev1.Pod{}); err != nil {
		t.Fatal(err)
	}
	bind := func(node string) string {
		out := &corev1.Pod{}
		err := ps.GuaranteedUpdate(ctx, podKey("ns", "p"), out, false, nil, func(cur runtime.Object) (runtime.Object, error) {
			p := cur.(*corev1.Pod)
			p.Spec.NodeName = node
			return p, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out.ResourceVersion
	}
	rv1 := bind("node1") // starts matching: Added
	rv2 := bind("node2") // stops matching: Deleted, with the state before
	type podEv struct {
		Type watch.EventType
		Node string
		RV   string
	}
	var got []podEv
	for range 2 {
		e := nextEvent(t, w)
		p := e.Object.(*corev1.Pod)
		got = append(got, podEv{e.Type, p.Spec.NodeName, p.ResourceVersion})
	}
	diff(t, "field-selected pod events", []podEv{{watch.Added, "node1", rv1}, {watch.Deleted, "node1", rv2}}, got)
}
