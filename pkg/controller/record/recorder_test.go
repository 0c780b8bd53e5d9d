package record

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

var eventsGR = schema.GroupResource{Resource: "events"}

// fakeSink is an action-recording Sink that keeps the events it stores.
type fakeSink struct {
	mu      sync.Mutex
	events  map[string]*corev1.Event
	actions []string
	// errs are returned, in order, by the next writes instead of performing
	// them.
	errs []error
}

func newFakeSink() *fakeSink { return &fakeSink{events: map[string]*corev1.Event{}} }

func (s *fakeSink) nextErr() error {
	if len(s.errs) == 0 {
		return nil
	}
	err := s.errs[0]
	s.errs = s.errs[1:]
	return err
}

func (s *fakeSink) Create(_ context.Context, ev *corev1.Event) (*corev1.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.actions = append(s.actions, fmt.Sprintf("create %s/%s count=%d", ev.Namespace, ev.Name, ev.Count))
	if err := s.nextErr(); err != nil {
		return nil, err
	}
	key := ev.Namespace + "/" + ev.Name
	if _, ok := s.events[key]; ok {
		return nil, apierrors.NewAlreadyExists(eventsGR, ev.Name)
	}
	s.events[key] = ev.DeepCopy()
	return ev, nil
}

func (s *fakeSink) Patch(_ context.Context, namespace, name string, pt types.PatchType, data []byte) (*corev1.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.actions = append(s.actions, fmt.Sprintf("patch %s/%s %s", namespace, name, data))
	if err := s.nextErr(); err != nil {
		return nil, err
	}
	if pt != types.StrategicMergePatchType {
		return nil, apierrors.NewBadRequest("patch type " + string(pt))
	}
	ev, ok := s.events[namespace+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(eventsGR, name)
	}
	// The patch only sets scalar fields, so decoding it over the stored
	// event is what the server's merge does.
	if err := json.Unmarshal(data, ev); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return ev.DeepCopy(), nil
}

func (s *fakeSink) recorded() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.actions...)
}

func (s *fakeSink) stored() []*corev1.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*corev1.Event
	for _, ev := range s.events {
		out = append(out, ev.DeepCopy())
	}
	return out
}

func newTestRecorder(t testing.TB, sink Sink, cfg Config) *Recorder {
	t.Helper()
	cfg.Sink = sink
	if cfg.Component == "" {
		cfg.Component = "test-controller"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// run starts r.Run in the test's bubble and stops it at cleanup.
func run(t *testing.T, r *Recorder) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

func testPod() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "pod-uid", ResourceVersion: "7"}}
}

func TestEventContent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := newFakeSink()
		r := newTestRecorder(t, sink, Config{Host: "node-1"})
		run(t, r)
		start := time.Now()
		r.Eventf(testPod(), corev1.EventTypeWarning, "FailedCreate", "could not create %d pods", 3)
		synctest.Wait()
		got := sink.stored()
		if len(got) != 1 {
			t.Fatalf("stored %d events, want 1", len(got))
		}
		ts := metav1.NewTime(start)
		want := &corev1.Event{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("web.%x", start.UnixNano())},
			InvolvedObject: corev1.ObjectReference{
				APIVersion: "v1", Kind: "Pod", Namespace: "ns", Name: "web", UID: "pod-uid", ResourceVersion: "7",
			},
			Reason: "FailedCreate", Message: "could not create 3 pods",
			Source:         corev1.EventSource{Component: "test-controller", Host: "node-1"},
			FirstTimestamp: ts, LastTimestamp: ts, Count: 1, Type: corev1.EventTypeWarning,
			ReportingController: "test-controller", ReportingInstance: "node-1",
		}
		if diff := cmp.Diff(want, got[0]); diff != "" {
			t.Errorf("event (-want +got):\n%s", diff)
		}
		if s := r.Stats(); s != (Stats{Written: 1}) {
			t.Errorf("stats = %+v", s)
		}
	})
}

func TestClusterScopedObjectsGoToDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := newFakeSink()
		r := newTestRecorder(t, sink, Config{})
		run(t, r)
		r.Event(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, corev1.EventTypeNormal, "Ready", "node is ready")
		synctest.Wait()
		got := sink.stored()
		if len(got) != 1 || got[0].Namespace != metav1.NamespaceDefault || got[0].InvolvedObject.Kind != "Node" {
			t.Fatalf("stored %+v", got)
		}
	})
}

func TestAggregation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := newFakeSink()
		r := newTestRecorder(t, sink, Config{})
		run(t, r)
		first := time.Now()
		for range 3 {
			r.Event(testPod(), corev1.EventTypeNormal, "Synced", "synced ok")
			synctest.Wait()
			time.Sleep(time.Second)
		}
		last := time.Now().Add(-time.Second)
		// Differing in message, type or reason, or about another object:
		// a new event each.
		r.Event(testPod(), corev1.EventTypeNormal, "Synced", "synced again")
		r.Event(testPod(), corev1.EventTypeWarning, "Synced", "synced ok")
		r.Event(testPod(), corev1.EventTypeNormal, "Other", "synced ok")
		other := testPod()
		other.UID = "recreated"
		r.Event(other, corev1.EventTypeNormal, "Synced", "synced ok")
		synctest.Wait()

		name := fmt.Sprintf("ns/web.%x", first.UnixNano())
		acts := sink.recorded()
		lastTS, _ := json.Marshal(metav1.NewTime(last))
		want := []string{
			"create " + name + " count=1",
			fmt.Sprintf(`patch %s {"count":2,"lastTimestamp":%s,"message":"synced ok"}`, name, mustTS(first.Add(time.Second))),
			fmt.Sprintf(`patch %s {"count":3,"lastTimestamp":%s,"message":"synced ok"}`, name, lastTS),
		}
		if diff := cmp.Diff(want, acts[:3]); diff != "" {
			t.Errorf("first actions (-want +got):\n%s", diff)
		}
		if len(acts) != 7 {
			t.Errorf("%d actions, want 7: %v", len(acts), acts)
		}
		for _, ev := range sink.stored() {
			if ev.Namespace+"/"+ev.Name != name {
				continue
			}
			if ev.Count != 3 || !ev.FirstTimestamp.Time.Equal(first) || !ev.LastTimestamp.Time.Equal(last) {
				t.Errorf("aggregated event: count %d first %v last %v; want 3 %v %v", ev.Count, ev.FirstTimestamp, ev.LastTimestamp, first, last)
			}
		}
		if len(sink.stored()) != 5 {
			t.Errorf("stored %d events, want 5", len(sink.stored()))
		}
	})
}

func mustTS(t time.Time) string {
	b, err := json.Marshal(metav1.NewTime(t))
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestRateLimitPerObject(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := newFakeSink()
		r := newTestRecorder(t, sink, Config{Burst: 2, QPS: 1})
		run(t, r)
		for range 5 {
			r.Event(testPod(), corev1.EventTypeNormal, "Tick", "tick")
		}
		// Another object has its own bucket.
		r.Event(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"}}, corev1.EventTypeNormal, "Tick", "tick")
		synctest.Wait()
		if s := r.Stats(); s.Written != 3 || s.RateLimited != 3 {
			t.Fatalf("stats = %+v, want 3 written and 3 rate-limited", s)
		}
		// A second later one more token: the patch carries every repeat,
		// the held-back ones included.
		time.Sleep(time.Second)
		r.Event(testPod(), corev1.EventTypeNormal, "Tick", "tick")
		synctest.Wait()
		acts := sink.recorded()
		last := acts[len(acts)-1]
		if want := `"count":6`; !strings.Contains(last, want) {
			t.Fatalf("last action %q lacks %s", last, want)
		}
		if s := r.Stats(); s.Written != 4 || s.RateLimited != 3 {
			t.Fatalf("stats = %+v, want 4 written and 3 rate-limited", s)
		}
	})
}

// TestNeverBlocks fills the buffer with no Run draining it: every call
// returns, and the overflow is counted.
func TestNeverBlocks(t *testing.T) {
	r := newTestRecorder(t, newFakeSink(), Config{BufferSize: 3})
	for i := range 10 {
		r.Eventf(testPod(), corev1.EventTypeNormal, "Tick", "tick %d", i)
	}
	if s := r.Stats(); s.Dropped != 7 || s.Written != 0 {
		t.Fatalf("stats = %+v, want 7 dropped", s)
	}
}

// TestSlowSinkDoesNotBlock: while the sink is stuck on a write, callers go
// on and overflow is dropped, not queued without bound.
func TestSlowSinkDoesNotBlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		sink := &blockingSink{fakeSink: newFakeSink(), release: release}
		r := newTestRecorder(t, sink, Config{BufferSize: 2, QPS: -1})
		run(t, r)
		r.Eventf(testPod(), corev1.EventTypeNormal, "Tick", "first")
		synctest.Wait() // the sink now holds the first event
		for i := range 5 {
			r.Eventf(testPod(), corev1.EventTypeNormal, "Tick", "more %d", i)
		}
		if s := r.Stats(); s.Dropped != 3 {
			t.Fatalf("stats = %+v, want 3 dropped", s)
		}
		close(release)
		synctest.Wait()
		if s := r.Stats(); s.Written != 3 {
			t.Fatalf("stats = %+v, want 3 written", s)
		}
	})
}

type blockingSink struct {
	*fakeSink
	release chan struct{}
}

func (s *blockingSink) Create(ctx context.Context, ev *corev1.Event) (*corev1.Event, error) {
	<-s.release
	return s.fakeSink.Create(ctx, ev)
}

func TestPatchOfVanishedEventRecreates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := newFakeSink()
		r := newTestRecorder(t, sink, Config{})
		run(t, r)
		r.Event(testPod(), corev1.EventTypeNormal, "Tick", "tick")
		synctest.Wait()
		sink.mu.Lock()
		clear(sink.events) // the event expired
		sink.mu.Unlock()
		r.Event(testPod(), corev1.EventTypeNormal, "Tick", "tick")
		synctest.Wait()
		acts := sink.recorded()
		if len(acts) != 3 || !strings.Contains(acts[1], "patch") || !strings.Contains(acts[2], "count=2") {
			t.Fatalf("actions %v, want create, patch, create count=2", acts)
		}
		if len(sink.stored()) != 1 {
			t.Fatal("event not recreated")
		}
	})
}

func TestWriteRetries(t *testing.T) {
	internal := apierrors.NewInternalError(errors.New("etcd down"))
	tests := []struct {
		name        string
		errs        []error
		wantCreates int
		want        Stats
	}{
		{name: "recovers", errs: []error{internal, internal}, wantCreates: 3, want: Stats{Written: 1}},
		{name: "gives up", errs: []error{internal, internal, internal}, wantCreates: 3, want: Stats{Failed: 1}},
		{name: "invalid is not retried", errs: []error{apierrors.NewInvalid(schema.GroupKind{Kind: "Event"}, "x", nil)}, wantCreates: 1, want: Stats{Failed: 1}},
		{name: "already exists is success", errs: []error{internal, apierrors.NewAlreadyExists(eventsGR, "x")}, wantCreates: 2, want: Stats{Written: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sink := newFakeSink()
				sink.errs = tt.errs
				r := newTestRecorder(t, sink, Config{})
				run(t, r)
				r.Event(testPod(), corev1.EventTypeNormal, "Tick", "tick")
				synctest.Wait()
				if len(sink.recorded()) != 1 {
					t.Fatalf("retried without waiting: %v", sink.recorded())
				}
				time.Sleep(time.Minute)
				synctest.Wait()
				if got := len(sink.recorded()); got != tt.wantCreates {
					t.Errorf("creates = %d, want %d", got, tt.wantCreates)
				}
				if s := r.Stats(); s != tt.want {
					t.Errorf("stats = %+v, want %+v", s, tt.want)
				}
			})
		})
	}
}

func TestDroppedEvents(t *testing.T) {
	r := newTestRecorder(t, newFakeSink(), Config{})
	r.Event(testPod(), "Fatal", "Bad", "unsupported type")
	r.Event(&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j"}}, corev1.EventTypeNormal, "X", "kind unknown to the scheme")
	if s := r.Stats(); s.Dropped != 2 {
		t.Fatalf("stats = %+v, want 2 dropped", s)
	}
	var nilPod *corev1.Pod
	r.Event(nilPod, corev1.EventTypeNormal, "X", "nil pointer")
	r.Event(nil, corev1.EventTypeNormal, "X", "nil")
	if s := r.Stats(); s.Dropped != 4 {
		t.Fatalf("stats = %+v, want 4 dropped", s)
	}
	// An object that states its kind needs no scheme.
	job := &batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}, ObjectMeta: metav1.ObjectMeta{Name: "j"}}
	r.Event(job, corev1.EventTypeNormal, "X", "kind set")
	if s := r.Stats(); s.Dropped != 4 {
		t.Fatalf("stats = %+v, want still 4 dropped", s)
	}
}

func TestUniqueNamesInOneInstant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := newFakeSink()
		r := newTestRecorder(t, sink, Config{})
		run(t, r)
		for i := range 5 {
			r.Eventf(testPod(), corev1.EventTypeNormal, "Tick", "tick %d", i)
		}
		synctest.Wait()
		if n := len(sink.stored()); n != 5 {
			t.Fatalf("stored %d events, want 5 (names collided?) %v", n, sink.recorded())
		}
	})
}

func TestConfigAndRunOnce(t *testing.T) {
	if _, err := New(Config{Component: "c"}); err == nil {
		t.Error("missing sink accepted")
	}
	if _, err := New(Config{Sink: newFakeSink()}); err == nil {
		t.Error("missing component accepted")
	}
	if _, err := New(Config{Sink: newFakeSink(), Component: "c", BufferSize: -1}); err == nil {
		t.Error("negative buffer accepted")
	}
	r := newTestRecorder(t, newFakeSink(), Config{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := r.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Run(ctx); err == nil {
		t.Fatal("second Run accepted")
	}
}

func TestLRU(t *testing.T) {
	l := newLRU[string, int](2)
	l.put("a", 1)
	l.put("b", 2)
	l.get("a") // b is now the least recently used
	l.put("c", 3)
	if _, ok := l.get("b"); ok {
		t.Error("b survived eviction")
	}
	if v, ok := l.get("a"); !ok || v != 1 {
		t.Error("a evicted")
	}
	l.put("a", 10)
	if v, _ := l.get("a"); v != 10 || l.len() != 2 {
		t.Errorf("a = %d, len %d", v, l.len())
	}
}
