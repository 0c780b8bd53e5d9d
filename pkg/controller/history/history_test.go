package history

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kplane/kplane/pkg/cache"
)

var setKind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")

func parent() *appsv1.StatefulSet {
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "set-uid"}}
}

func raw(s string) runtime.RawExtension { return runtime.RawExtension{Raw: []byte(s)} }

// fakeClient keeps revisions in a map and records the writes.
type fakeClient struct {
	mu        sync.Mutex
	revs      map[string]*appsv1.ControllerRevision
	actions   []string
	conflicts int // UpdateRevision fails with Conflict this many times
	patches   []string
}

func newFakeClient(revs ...*appsv1.ControllerRevision) *fakeClient {
	f := &fakeClient{revs: map[string]*appsv1.ControllerRevision{}}
	for _, r := range revs {
		f.revs[r.Name] = r.DeepCopy()
	}
	return f
}

func (f *fakeClient) CreateRevision(_ context.Context, rev *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.actions = append(f.actions, "create "+rev.Name)
	if _, ok := f.revs[rev.Name]; ok {
		return nil, apierrors.NewAlreadyExists(appsv1.Resource("controllerrevisions"), rev.Name)
	}
	out := rev.DeepCopy()
	out.UID = types.UID("uid-" + rev.Name)
	f.revs[rev.Name] = out
	return out.DeepCopy(), nil
}

func (f *fakeClient) GetRevision(_ context.Context, _, name string) (*appsv1.ControllerRevision, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.revs[name]
	if !ok {
		return nil, apierrors.NewNotFound(appsv1.Resource("controllerrevisions"), name)
	}
	return r.DeepCopy(), nil
}

func (f *fakeClient) UpdateRevision(_ context.Context, rev *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.actions = append(f.actions, "update "+rev.Name)
	if f.conflicts > 0 {
		f.conflicts--
		return nil, apierrors.NewConflict(appsv1.Resource("controllerrevisions"), rev.Name, nil)
	}
	f.revs[rev.Name] = rev.DeepCopy()
	return rev.DeepCopy(), nil
}

func (f *fakeClient) DeleteRevision(_ context.Context, _, name string, _ types.UID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.actions = append(f.actions, "delete "+name)
	if _, ok := f.revs[name]; !ok {
		return apierrors.NewNotFound(appsv1.Resource("controllerrevisions"), name)
	}
	delete(f.revs, name)
	return nil
}

func (f *fakeClient) PatchRevision(_ context.Context, _, name string, _ types.PatchType, data []byte) (*appsv1.ControllerRevision, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.actions = append(f.actions, "patch "+name)
	f.patches = append(f.patches, string(data))
	r, ok := f.revs[name]
	if !ok {
		return nil, apierrors.NewNotFound(appsv1.Resource("controllerrevisions"), name)
	}
	return r.DeepCopy(), nil
}

func newHistory(t *testing.T, fc *fakeClient, cached ...*appsv1.ControllerRevision) *History {
	t.Helper()
	idx, err := cache.NewIndexer(cache.IndexerConfig[*appsv1.ControllerRevision]{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range cached {
		if err := idx.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	h, err := New(Config{Lister: cache.NewLister(idx, appsv1.Resource("controllerrevisions")), Client: fc})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestNewControllerRevisionNamedAfterParentAndHash(t *testing.T) {
	p := parent()
	cc := int32(0)
	r := NewControllerRevision(p, setKind, map[string]string{"app": "web"}, raw(`{"a":1}`), 3, &cc)
	hash := r.Labels[HashLabel]
	if hash == "" || r.Name != "web-"+hash {
		t.Fatalf("name %q, hash label %q", r.Name, hash)
	}
	if r.Namespace != "ns" || r.Revision != 3 || r.Labels["app"] != "web" {
		t.Fatalf("revision %+v", r.ObjectMeta)
	}
	ref := metav1.GetControllerOf(r)
	if ref == nil || ref.UID != p.UID || ref.Kind != "StatefulSet" || ref.APIVersion != "apps/v1" || !*ref.BlockOwnerDeletion {
		t.Fatalf("controller ref %+v", ref)
	}
	if again := NewControllerRevision(p, setKind, nil, raw(`{"a":1}`), 9, &cc); again.Name != r.Name {
		t.Errorf("same data hashed to %q and %q", r.Name, again.Name)
	}
	cc1 := int32(1)
	if bumped := NewControllerRevision(p, setKind, nil, raw(`{"a":1}`), 3, &cc1); bumped.Name == r.Name {
		t.Errorf("collision count did not change the name %q", r.Name)
	}
	if other := NewControllerRevision(p, setKind, nil, raw(`{"a":2}`), 3, &cc); other.Name == r.Name {
		t.Errorf("other data hashed to the same name %q", r.Name)
	}
}

func TestHashIsStable(t *testing.T) {
	// Pinned: a change here renames every revision of every existing parent.
	r := &appsv1.ControllerRevision{Data: raw(`{"spec":{"template":{"$patch":"replace"}}}`)}
	cc := int32(2)
	if got, want := Hash(r, nil)+" "+Hash(r, &cc), "5c7586484 589f85db5d"; got != want {
		t.Errorf("hashes = %q, want %q", got, want)
	}
}

func TestNameTruncatesLongPrefix(t *testing.T) {
	n := Name(strings.Repeat("a", 300), "abc")
	if len(n) != 223+4 || !strings.HasSuffix(n, "-abc") {
		t.Errorf("name %q (%d)", n, len(n))
	}
}

func TestSortControllerRevisionsByRevisionThenCreationThenName(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Second))
	revs := []*appsv1.ControllerRevision{
		{ObjectMeta: metav1.ObjectMeta{Name: "c", CreationTimestamp: t0}, Revision: 2},
		{ObjectMeta: metav1.ObjectMeta{Name: "b", CreationTimestamp: t1}, Revision: 1},
		{ObjectMeta: metav1.ObjectMeta{Name: "z", CreationTimestamp: t0}, Revision: 1},
		{ObjectMeta: metav1.ObjectMeta{Name: "a", CreationTimestamp: t0}, Revision: 1},
	}
	SortControllerRevisions(revs)
	var names []string
	for _, r := range revs {
		names = append(names, r.Name)
	}
	if diff := cmp.Diff([]string{"a", "z", "b", "c"}, names); diff != "" {
		t.Error(diff)
	}
	if got := NextRevision(revs); got != 3 {
		t.Errorf("NextRevision = %d, want 3", got)
	}
	if got := NextRevision(nil); got != 1 {
		t.Errorf("NextRevision(nil) = %d, want 1", got)
	}
}

func TestEqualAndFindEqualRevisions(t *testing.T) {
	a := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: raw(`{"x":1}`)}
	b := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Data: raw(`{"x":2}`)}
	c := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: raw(`{"x":1}`)}
	if !EqualRevision(a, c) || EqualRevision(a, b) || EqualRevision(a, nil) || !EqualRevision(nil, nil) {
		t.Error("EqualRevision compares data")
	}
	got := FindEqualRevisions([]*appsv1.ControllerRevision{a, b, c}, c)
	if len(got) != 2 || got[0] != a || got[1] != c {
		t.Errorf("FindEqualRevisions = %v", got)
	}
}

func TestCreate(t *testing.T) {
	p := parent()
	zero := int32(0)
	want := NewControllerRevision(p, setKind, nil, raw(`{"x":1}`), 1, &zero)
	tests := []struct {
		name      string
		existing  []*appsv1.ControllerRevision
		wantCount int32
		wantName  string
		wantActs  int
	}{
		{name: "creates under the hash of data and collision count", wantCount: 0, wantName: want.Name, wantActs: 1},
		{
			name:      "an existing revision with the same data is returned",
			existing:  []*appsv1.ControllerRevision{want},
			wantCount: 0, wantName: want.Name, wantActs: 1,
		},
		{
			name: "a name collision bumps the collision count and retries",
			existing: []*appsv1.ControllerRevision{{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: want.Name}, Data: raw(`{"other":true}`),
			}},
			wantCount: 1, wantName: NewControllerRevision(p, setKind, nil, raw(`{"x":1}`), 1, ptr(int32(1))).Name, wantActs: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := newFakeClient(tt.existing...)
			h := newHistory(t, fc)
			cc := int32(0)
			got, err := h.Create(t.Context(), p, want, &cc)
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != tt.wantName || cc != tt.wantCount || len(fc.actions) != tt.wantActs {
				t.Errorf("got %s, count %d, actions %v; want %s, %d, %d actions", got.Name, cc, fc.actions, tt.wantName, tt.wantCount, tt.wantActs)
			}
			if got.Labels[HashLabel] != strings.TrimPrefix(got.Name, "web-") {
				t.Errorf("hash label %q does not match name %q", got.Labels[HashLabel], got.Name)
			}
		})
	}
	if _, err := newHistory(t, newFakeClient()).Create(t.Context(), p, want, nil); err == nil {
		t.Error("nil collision count accepted")
	}
}

func ptr[T any](v T) *T { return &v }

func TestUpdateRetriesConflictAndSkipsNoop(t *testing.T) {
	r := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1"}, Revision: 1}
	fc := newFakeClient(r)
	fc.conflicts = 1
	h := newHistory(t, fc)
	got, err := h.Update(t.Context(), r, 4)
	if err != nil || got.Revision != 4 {
		t.Fatalf("Update = %v, %v", got, err)
	}
	if len(fc.actions) != 2 {
		t.Errorf("actions %v, want a conflict and a retry", fc.actions)
	}
	fc.actions = nil
	if _, err := h.Update(t.Context(), got, 4); err != nil || len(fc.actions) != 0 {
		t.Errorf("no-op update wrote %v (%v)", fc.actions, err)
	}
}

func TestListReturnsOwnedAndOrphans(t *testing.T) {
	p := parent()
	yes := true
	mine := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mine", Labels: map[string]string{"app": "web"},
		OwnerReferences: []metav1.OwnerReference{{UID: p.UID, Controller: &yes, Kind: "StatefulSet", Name: "web"}}}}
	orphan := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "orphan", Labels: map[string]string{"app": "web"}}}
	theirs := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "theirs", Labels: map[string]string{"app": "web"},
		OwnerReferences: []metav1.OwnerReference{{UID: "other", Controller: &yes, Kind: "StatefulSet", Name: "x"}}}}
	unmatched := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "unmatched", Labels: map[string]string{"app": "db"}}}
	elsewhere := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "elsewhere", Labels: map[string]string{"app": "web"}}}
	h := newHistory(t, newFakeClient(), mine, orphan, theirs, unmatched, elsewhere)
	got, err := h.List(p, labels.SelectorFromSet(labels.Set{"app": "web"}))
	if err != nil {
		t.Fatal(err)
	}
	SortControllerRevisions(got)
	var names []string
	for _, r := range got {
		names = append(names, r.Name)
	}
	if diff := cmp.Diff([]string{"mine", "orphan"}, names); diff != "" {
		t.Error(diff)
	}
}

func TestAdoptAndRelease(t *testing.T) {
	p := parent()
	r := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1", UID: "rev-uid"}}
	fc := newFakeClient(r)
	h := newHistory(t, fc)
	if _, err := h.Adopt(t.Context(), p, setKind, r); err != nil {
		t.Fatal(err)
	}
	wantAdopt := `{"metadata":{"ownerReferences":[{"apiVersion":"apps/v1","kind":"StatefulSet","name":"web","uid":"set-uid","controller":true,"blockOwnerDeletion":true}],"uid":"rev-uid"}}`
	if fc.patches[0] != wantAdopt {
		t.Errorf("adopt patch\n got %s\nwant %s", fc.patches[0], wantAdopt)
	}
	if _, err := h.Release(t.Context(), p, r); err != nil {
		t.Fatal(err)
	}
	wantRelease := `{"metadata":{"ownerReferences":[{"$patch":"delete","uid":"set-uid"}],"uid":"rev-uid"}}`
	if fc.patches[1] != wantRelease {
		t.Errorf("release patch\n got %s\nwant %s", fc.patches[1], wantRelease)
	}
	yes := true
	owned := r.DeepCopy()
	owned.OwnerReferences = []metav1.OwnerReference{{UID: "other", Controller: &yes, Kind: "DaemonSet", Name: "x"}}
	if _, err := h.Adopt(t.Context(), p, setKind, owned); err == nil {
		t.Error("adopted a revision another controller owns")
	}
	gone := r.DeepCopy()
	gone.Name = "gone"
	if out, err := h.Release(t.Context(), p, gone); err != nil || out != nil {
		t.Errorf("release of a gone revision = %v, %v; want nil, nil", out, err)
	}
	if err := h.Delete(t.Context(), gone); err != nil {
		t.Errorf("delete of a gone revision: %v", err)
	}
}
