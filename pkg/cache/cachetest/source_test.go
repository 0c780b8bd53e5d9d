package cachetest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/cache/cachetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func pod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
}

func newSource(t *testing.T, cfg cachetest.Config, names ...string) *cachetest.Source[*corev1.Pod] {
	t.Helper()
	s := cachetest.New[*corev1.Pod](cfg)
	for _, n := range names {
		if _, err := s.Create(pod(n)); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// next reads one event or fails if the channel closed.
func next(t *testing.T, w cache.Watch[*corev1.Pod]) cache.Event[*corev1.Pod] {
	t.Helper()
	ev, ok := <-w.ResultChan()
	if !ok {
		t.Fatal("watch closed")
	}
	return ev
}

func describe(ev cache.Event[*corev1.Pod]) string {
	if ev.Type == watch.Error {
		return fmt.Sprintf("ERROR %d %s", ev.Status.Code, ev.Status.Reason)
	}
	return fmt.Sprintf("%s %s@%s %v", ev.Type, ev.Object.Name, ev.Object.ResourceVersion, ev.Object.Annotations)
}

func TestSourcePaginatedList(t *testing.T) {
	s := newSource(t, cachetest.Config{}, "c", "a", "b", "e", "d")
	ctx := context.Background()
	var got []string
	opts := metav1.ListOptions{Limit: 2}
	var rv string
	for {
		page, err := s.List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		if rv == "" {
			rv = page.ResourceVersion
		} else if page.ResourceVersion != rv {
			t.Errorf("page at rv %s, first at %s", page.ResourceVersion, rv)
		}
		for _, p := range page.Items {
			got = append(got, p.Name)
		}
		// Changes between pages do not show: pages come from one snapshot.
		_, _ = s.Create(pod(fmt.Sprint("z", len(got))))
		if page.Continue == "" {
			break
		}
		opts.Continue = page.Continue
	}
	if d := cmp.Diff([]string{"a", "b", "c", "d", "e"}, got); d != "" {
		t.Error(d)
	}
}

func TestSourceExpiredContinueAndWatch(t *testing.T) {
	s := newSource(t, cachetest.Config{}, "a", "b", "c")
	ctx := context.Background()
	page, err := s.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	s.Compact()
	_, err = s.List(ctx, metav1.ListOptions{Limit: 1, Continue: page.Continue})
	if !apierrors.IsResourceExpired(err) {
		t.Errorf("continue after compaction: %v, want Expired", err)
	}
	_, err = s.Watch(ctx, metav1.ListOptions{ResourceVersion: "2"})
	if !apierrors.IsResourceExpired(err) {
		t.Errorf("watch from a compacted rv: %v, want Expired", err)
	}
	if _, err := s.Watch(ctx, metav1.ListOptions{ResourceVersion: "x"}); !apierrors.IsBadRequest(err) {
		t.Errorf("watch from a bad rv: %v", err)
	}
	if _, err := s.List(ctx, metav1.ListOptions{Continue: "garbage"}); !apierrors.IsBadRequest(err) {
		t.Errorf("bad continue: %v", err)
	}
}

func TestSourceWatchReplaysAndStreams(t *testing.T) {
	s := newSource(t, cachetest.Config{}, "a")
	ctx := context.Background()
	rv := s.ResourceVersion()
	_, _ = s.Create(pod("b"))
	w, err := s.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	_, _ = s.Delete("ns/a")
	s.Bookmark()
	s.ExpireWatches()
	var got []string
	for ev := range w.ResultChan() {
		got = append(got, describe(ev))
	}
	want := []string{"ADDED b@3 map[]", "DELETED a@4 map[]", "BOOKMARK @4 map[]", "ERROR 410 Expired"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("-want +got:\n%s", d)
	}
}

func TestSourceWatchList(t *testing.T) {
	s := newSource(t, cachetest.Config{}, "b", "a")
	ctx := context.Background()
	yes := true
	w, err := s.Watch(ctx, metav1.ListOptions{SendInitialEvents: &yes, AllowWatchBookmarks: true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		t.Fatal(err)
	}
	got := []string{describe(next(t, w)), describe(next(t, w)), describe(next(t, w))}
	want := []string{"ADDED a@3 map[]", "ADDED b@2 map[]", "BOOKMARK @3 map[k8s.io/initial-events-end:true]"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("-want +got:\n%s", d)
	}
	s.DropWatches()
	if _, ok := <-w.ResultChan(); ok {
		t.Error("dropped watch still open")
	}
	w.Stop()

	refusing := newSource(t, cachetest.Config{RefuseWatchList: true})
	if _, err := refusing.Watch(ctx, metav1.ListOptions{SendInitialEvents: &yes,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}); !apierrors.IsInvalid(err) {
		t.Errorf("refused watch-list: %v", err)
	}
}

func TestSourceStopAndContext(t *testing.T) {
	s := newSource(t, cachetest.Config{}, "a")
	ctx, cancel := context.WithCancel(context.Background())
	w, err := s.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	for range w.ResultChan() {
	}
	w.Stop()
	w.Stop()
	if n := s.OpenWatches(); n != 0 {
		t.Errorf("%d open watches", n)
	}
}

func TestSourceCreateUpdateDelete(t *testing.T) {
	s := newSource(t, cachetest.Config{}, "a")
	if _, err := s.Create(pod("a")); !apierrors.IsAlreadyExists(err) {
		t.Errorf("duplicate create: %v", err)
	}
	if _, err := s.Update(pod("nope")); !apierrors.IsNotFound(err) {
		t.Errorf("update of a missing object: %v", err)
	}
	if _, err := s.Delete("ns/nope"); !apierrors.IsNotFound(err) {
		t.Errorf("delete of a missing object: %v", err)
	}
	in := pod("b")
	out, _ := s.Create(in)
	if in == out || in.ResourceVersion != "" {
		t.Error("Create did not copy its input")
	}
}

func TestSourceHold(t *testing.T) {
	s := newSource(t, cachetest.Config{})
	w, err := s.Watch(context.Background(), metav1.ListOptions{ResourceVersion: s.ResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	s.Hold()
	_, _ = s.Create(pod("a"))
	select {
	case ev := <-w.ResultChan():
		t.Fatalf("held watch delivered %s", describe(ev))
	default:
	}
	s.Release()
	if ev := next(t, w); ev.Type != watch.Added || ev.Object.Name != "a" {
		t.Errorf("after release: %s", describe(ev))
	}
}
