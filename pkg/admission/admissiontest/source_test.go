package admissiontest

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	configMaps = corev1.SchemeGroupVersion.WithResource("configmaps")
	quotas     = corev1.SchemeGroupVersion.WithResource("resourcequotas")
	widgets    = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
)

func cm(ns, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func quota(name, used string) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec:       corev1.ResourceQuotaSpec{Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}},
		Status:     corev1.ResourceQuotaStatus{Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse(used)}},
	}
}

func names(t *testing.T, objs []runtime.Object) []string {
	t.Helper()
	var out []string
	for _, o := range objs {
		m := accessor(o)
		out = append(out, m.GetNamespace()+"/"+m.GetName())
	}
	return out
}

func TestCacheAndStore(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name      string
		setup     func(s *Source)
		wantGet   bool
		wantFetch bool
		wantList  []string
	}{{
		name:      "an added object is in the cache and the store",
		setup:     func(s *Source) { s.Add(configMaps, cm("ns", "a")) },
		wantGet:   true,
		wantFetch: true,
		wantList:  []string{"ns/a"},
	}, {
		name:      "an uncached object only Fetch finds",
		setup:     func(s *Source) { s.AddUncached(configMaps, cm("ns", "a")) },
		wantFetch: true,
	}, {
		name: "while lagging the cache keeps what it had",
		setup: func(s *Source) {
			s.Add(configMaps, cm("ns", "b"))
			s.SetLagging(true)
			s.Add(configMaps, cm("ns", "a"))
		},
		wantFetch: true,
		wantList:  []string{"ns/b"},
	}, {
		name: "turning lagging off lets the cache catch up",
		setup: func(s *Source) {
			s.SetLagging(true)
			s.Add(configMaps, cm("ns", "a"))
			s.SetLagging(false)
		},
		wantGet:   true,
		wantFetch: true,
		wantList:  []string{"ns/a"},
	}, {
		name: "Set replaces every object of the resource",
		setup: func(s *Source) {
			s.Add(configMaps, cm("ns", "a"), cm("ns", "b"))
			s.Set(configMaps, cm("ns", "c"))
		},
		wantList: []string{"ns/c"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Source{}
			tt.setup(s)
			_, err := s.Get(ctx, configMaps, "ns", "a")
			if got := err == nil; got != tt.wantGet || !got && !apierrors.IsNotFound(err) {
				t.Errorf("Get: %v, want found %v", err, tt.wantGet)
			}
			_, err = s.Fetch(ctx, configMaps, "ns", "a")
			if got := err == nil; got != tt.wantFetch || !got && !apierrors.IsNotFound(err) {
				t.Errorf("Fetch: %v, want found %v", err, tt.wantFetch)
			}
			l, _, err := s.List(ctx, configMaps, "ns")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantList, names(t, l)); diff != "" {
				t.Errorf("List (-want +got):\n%s", diff)
			}
		})
	}
}

func TestListIsSortedAndFilteredByNamespace(t *testing.T) {
	s := &Source{}
	s.Add(configMaps, cm("b", "x"), cm("a", "y"), cm("a", "x"))
	all, _, _ := s.List(context.Background(), configMaps, "")
	if diff := cmp.Diff([]string{"a/x", "a/y", "b/x"}, names(t, all)); diff != "" {
		t.Errorf("all namespaces (-want +got):\n%s", diff)
	}
	inA, _, _ := s.List(context.Background(), configMaps, "a")
	if diff := cmp.Diff([]string{"a/x", "a/y"}, names(t, inA)); diff != "" {
		t.Errorf("namespace a (-want +got):\n%s", diff)
	}
}

func TestRevisionChangesWithTheCache(t *testing.T) {
	ctx := context.Background()
	s := &Source{}
	rev := func() uint64 {
		t.Helper()
		_, r, err := s.List(ctx, configMaps, "")
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	steps := []struct {
		name    string
		do      func()
		changes bool
	}{
		{"Add", func() { s.Add(configMaps, cm("ns", "a")) }, true},
		{"replacing by Add", func() { s.Add(configMaps, cm("ns", "a")) }, true},
		{"AddUncached", func() { s.AddUncached(configMaps, cm("ns", "b")) }, false},
		{"another resource", func() { s.Add(widgets, cm("ns", "a")) }, false},
		{"Set", func() { s.Set(configMaps) }, true},
		{"a lagging Add", func() { s.SetLagging(true); s.Add(configMaps, cm("ns", "c")) }, false},
		{"catching up", func() { s.SetLagging(false) }, true},
		{"nothing", func() {}, false},
	}
	for _, st := range steps {
		before := rev()
		st.do()
		if changed := rev() != before; changed != st.changes {
			t.Errorf("%s: revision changed %v, want %v", st.name, changed, st.changes)
		}
	}
}

func TestListError(t *testing.T) {
	s := &Source{}
	down := errors.New("down")
	s.SetListError(down)
	if _, _, err := s.List(context.Background(), configMaps, ""); !errors.Is(err, down) {
		t.Fatalf("List = %v, want %v", err, down)
	}
	s.SetListError(nil)
	if _, _, err := s.List(context.Background(), configMaps, ""); err != nil {
		t.Fatalf("List after clearing the error: %v", err)
	}
}

func TestFetchesAreCountedAndCopied(t *testing.T) {
	s := &Source{}
	s.Add(configMaps, cm("ns", "a"))
	for range 3 {
		o, err := s.Fetch(context.Background(), configMaps, "ns", "a")
		if err != nil {
			t.Fatal(err)
		}
		o.(*corev1.ConfigMap).Data = map[string]string{"changed": "by caller"}
	}
	_, _ = s.Fetch(context.Background(), configMaps, "ns", "missing")
	if n := s.Fetches(); n != 4 {
		t.Errorf("Fetches = %d, want 4", n)
	}
	o, _ := s.Get(context.Background(), configMaps, "ns", "a")
	if o.(*corev1.ConfigMap).Data != nil {
		t.Error("a change to a fetched object reached the source")
	}
}

func TestUpdateStatusAsTheStatusSubresource(t *testing.T) {
	ctx := context.Background()
	s := &Source{}
	s.Add(quotas, quota("q", "0"))
	cached, _ := s.Get(ctx, quotas, "ns", "q")
	write := cached.(*corev1.ResourceQuota).DeepCopy()
	write.Status.Used = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}
	write.Spec.Scopes = nil // ignored: only the status is written
	out, err := s.UpdateStatus(ctx, quotas, write)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.ResourceQuota)
	if u := got.Status.Used[corev1.ResourcePods]; u.String() != "1" {
		t.Errorf("used pods = %s, want 1", u.String())
	}
	if len(got.Spec.Scopes) != 1 {
		t.Errorf("spec changed by a status write: %+v", got.Spec)
	}
	if rvNum(t, got) <= rvNum(t, write) {
		t.Errorf("resourceVersion %s not after %s", got.ResourceVersion, write.ResourceVersion)
	}
	if n := len(s.Updates()); n != 1 {
		t.Errorf("%d updates recorded, want 1", n)
	}
	// The cache follows the write (not lagging).
	if c, _ := s.Get(ctx, quotas, "ns", "q"); c.(*corev1.ResourceQuota).ResourceVersion != got.ResourceVersion {
		t.Error("the cache did not follow the status write")
	}

	tests := []struct {
		name  string
		obj   runtime.Object
		check func(error) bool
	}{
		{"a stale resourceVersion is a Conflict", write, apierrors.IsConflict},
		{"a missing object is NotFound", quota("nope", "0"), apierrors.IsNotFound},
		{"an object without status is a BadRequest", func() runtime.Object {
			s.Add(configMaps, cm("ns", "c"))
			return cm("ns", "c")
		}(), apierrors.IsBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gvr := quotas
			if _, ok := tt.obj.(*corev1.ConfigMap); ok {
				gvr = configMaps
			}
			if _, err := s.UpdateStatus(ctx, gvr, tt.obj); !tt.check(err) {
				t.Fatalf("got %v", err)
			}
		})
	}
}

func TestUpdateStatusOfUnstructured(t *testing.T) {
	ctx := context.Background()
	s := &Source{}
	w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w"}, "spec": map[string]any{"size": int64(1)}}}
	s.Add(widgets, w)
	cur, _ := s.Fetch(ctx, widgets, "", "w")
	next := cur.(*unstructured.Unstructured)
	next.Object["status"] = map[string]any{"ready": true}
	next.Object["spec"] = map[string]any{"size": int64(9)}
	out, err := s.UpdateStatus(ctx, widgets, next)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*unstructured.Unstructured).Object
	if diff := cmp.Diff(map[string]any{"ready": true}, got["status"]); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"size": int64(1)}, got["spec"]); diff != "" {
		t.Errorf("spec changed by a status write (-want +got):\n%s", diff)
	}
}

// A lagging cache does not see status writes, and a second writer with
// the cache's copy conflicts: the case of two servers sharing a store.
func TestLaggingStatusWritesConflictForTheSecondWriter(t *testing.T) {
	ctx := context.Background()
	s := &Source{}
	s.Add(quotas, quota("q", "0"))
	s.SetLagging(true)
	l, _, _ := s.List(ctx, quotas, "ns")
	first := l[0].(*corev1.ResourceQuota).DeepCopy()
	if _, err := s.UpdateStatus(ctx, quotas, first); err != nil {
		t.Fatal(err)
	}
	l, _, _ = s.List(ctx, quotas, "ns")
	if l[0].(*corev1.ResourceQuota).ResourceVersion != first.ResourceVersion {
		t.Error("a lagging cache saw the status write")
	}
	if _, err := s.UpdateStatus(ctx, quotas, l[0].DeepCopyObject()); !apierrors.IsConflict(err) {
		t.Fatalf("second writer: %v, want Conflict", err)
	}
}

// Concurrent writers with the same resourceVersion: exactly one wins each
// round, and the source stays consistent under -race.
func TestConcurrentStatusWritersOneWins(t *testing.T) {
	ctx := context.Background()
	s := &Source{}
	s.Add(quotas, quota("q", "0"))
	const writers = 8
	for round := range 20 {
		cur, err := s.Fetch(ctx, quotas, "ns", "q")
		if err != nil {
			t.Fatal(err)
		}
		wins := make([]bool, writers)
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() {
				q := cur.DeepCopyObject().(*corev1.ResourceQuota)
				q.Status.Used = corev1.ResourceList{corev1.ResourcePods: resource.MustParse(strconv.Itoa(i))}
				_, err := s.UpdateStatus(ctx, quotas, q)
				wins[i] = err == nil
				_, _, _ = s.List(ctx, quotas, "")
				_, _ = s.Get(ctx, quotas, "ns", "q")
			})
		}
		wg.Wait()
		n := 0
		for _, w := range wins {
			if w {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("round %d: %d writers won, want 1", round, n)
		}
	}
	if n := len(s.Updates()); n != 20 {
		t.Errorf("%d updates, want 20", n)
	}
}

func rvNum(t *testing.T, o metav1.Object) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(o.GetResourceVersion(), 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", o.GetResourceVersion(), err)
	}
	return n
}
