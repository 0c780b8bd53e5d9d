package cache_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/kplane/kplane/pkg/cache"
)

// popped is one Pop call's view, reduced to comparable strings.
type popped struct {
	Key     string
	Deltas  []string // "Type:rv" and "Deleted:rv(tombstone)"
	Initial bool
}

func popAll(t *testing.T, f *cache.DeltaFIFO[*corev1.Pod], store *cache.Indexer[*corev1.Pod]) []popped {
	t.Helper()
	var out []popped
	for f.Len() > 0 {
		err := f.Pop(context.Background(), func(d cache.Deltas[*corev1.Pod], initial bool) error {
			p := popped{Initial: initial}
			for _, x := range d {
				p.Key = x.Object.Namespace + "/" + x.Object.Name
				s := fmt.Sprintf("%s:%s", x.Type, x.Object.ResourceVersion)
				if x.Tombstone != nil {
					s += "(tombstone " + x.Tombstone.Key + ")"
				}
				p.Deltas = append(p.Deltas, s)
				if store != nil {
					if x.Type == cache.Deleted {
						_ = store.Delete(x.Object)
					} else {
						_ = store.Update(x.Object)
					}
				}
			}
			out = append(out, p)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func newFIFO(t *testing.T, known cache.KeyLister[*corev1.Pod]) *cache.DeltaFIFO[*corev1.Pod] {
	t.Helper()
	f, err := cache.NewDeltaFIFO(cache.DeltaFIFOConfig[*corev1.Pod]{KnownObjects: known})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestDeltaFIFOQueuesKeyOnceAndCollapsesDeletes(t *testing.T) {
	store := newIndexer(t)
	_ = store.Add(pod("ns", "known", "1"))
	f := newFIFO(t, store)
	_ = f.Add(pod("ns", "a", "1"))
	_ = f.Update(pod("ns", "b", "1"))
	_ = f.Update(pod("ns", "a", "2"))
	_ = f.Delete(pod("ns", "a", "3"))
	_ = f.Delete(pod("ns", "a", "4"))
	_ = f.Delete(pod("ns", "unknown", "5")) // neither known nor queued: dropped
	_ = f.Delete(pod("ns", "known", "6"))
	if f.Len() != 3 {
		t.Fatalf("Len = %d, want 3", f.Len())
	}
	want := []popped{
		// Two real deletes collapse into the older, as in client-go.
		{Key: "ns/a", Deltas: []string{"Added:1", "Updated:2", "Deleted:3"}},
		{Key: "ns/b", Deltas: []string{"Updated:1"}},
		{Key: "ns/known", Deltas: []string{"Deleted:6"}},
	}
	if d := cmp.Diff(want, popAll(t, f, nil)); d != "" {
		t.Errorf("-want +got:\n%s", d)
	}
}

func TestDeltaFIFOReplaceTombstones(t *testing.T) {
	store := newIndexer(t)
	f := newFIFO(t, store)
	// The first Replace is the initial list.
	if err := f.Replace([]*corev1.Pod{pod("ns", "a", "1"), pod("ns", "b", "1"), pod("ns", "c", "1")}); err != nil {
		t.Fatal(err)
	}
	if f.HasSynced() {
		t.Fatal("synced before popping the initial list")
	}
	got := popAll(t, f, store)
	for _, p := range got {
		if !p.Initial {
			t.Errorf("%s not flagged initial", p.Key)
		}
	}
	if !f.HasSynced() {
		t.Fatal("not synced after popping the initial list")
	}
	// b is updated in the queue but then vanishes from a relist; c vanishes
	// unqueued; d is only queued (never processed) and vanishes.
	_ = f.Update(pod("ns", "b", "2"))
	_ = f.Add(pod("ns", "d", "3"))
	if err := f.Replace([]*corev1.Pod{pod("ns", "a", "4")}); err != nil {
		t.Fatal(err)
	}
	want := []popped{
		{Key: "ns/b", Deltas: []string{"Updated:2", "Deleted:2(tombstone ns/b)"}},
		{Key: "ns/d", Deltas: []string{"Added:3", "Deleted:3(tombstone ns/d)"}},
		{Key: "ns/a", Deltas: []string{"Replaced:4"}},
		{Key: "ns/c", Deltas: []string{"Deleted:1(tombstone ns/c)"}},
	}
	got = popAll(t, f, store)
	// Key order of tombstones is not part of the contract: sort by key for
	// comparison but check the queue order of a first.
	sortPopped(got)
	sortPopped(want)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("-want +got:\n%s", d)
	}
	if d := cmp.Diff([]string{"ns/a"}, store.ListKeys()); d != "" {
		t.Error(d)
	}
}

func sortPopped(p []popped) {
	for i := range p {
		for j := i + 1; j < len(p); j++ {
			if p[j].Key < p[i].Key {
				p[i], p[j] = p[j], p[i]
			}
		}
	}
}

func TestDeltaFIFODeleteAfterTombstoneCollapsesToObservedDelete(t *testing.T) {
	store := newIndexer(t)
	_ = store.Add(pod("ns", "a", "1"))
	f := newFIFO(t, store)
	_ = f.Replace(nil)
	_ = f.Delete(pod("ns", "a", "9"))
	want := []popped{{Key: "ns/a", Deltas: []string{"Deleted:9"}, Initial: true}}
	if d := cmp.Diff(want, popAll(t, f, nil)); d != "" {
		t.Errorf("-want +got:\n%s", d)
	}
}

func TestDeltaFIFOResyncSkipsQueuedKeys(t *testing.T) {
	store := newIndexer(t)
	_ = store.Add(pod("ns", "a", "1"))
	_ = store.Add(pod("ns", "b", "1"))
	f := newFIFO(t, store)
	_ = f.Update(pod("ns", "a", "2"))
	if err := f.Resync(); err != nil {
		t.Fatal(err)
	}
	want := []popped{
		{Key: "ns/a", Deltas: []string{"Updated:2"}}, // an Add or Update before any Replace populates: not initial
		{Key: "ns/b", Deltas: []string{"Sync:1"}},
	}
	if d := cmp.Diff(want, popAll(t, f, nil)); d != "" {
		t.Errorf("-want +got:\n%s", d)
	}
}

func TestDeltaFIFORequeue(t *testing.T) {
	f := newFIFO(t, nil)
	_ = f.Add(pod("ns", "a", "1"))
	_ = f.Add(pod("ns", "b", "1"))
	err := f.Pop(context.Background(), func(d cache.Deltas[*corev1.Pod], _ bool) error {
		return fmt.Errorf("not yet: %w", cache.ErrRequeue)
	})
	if !errors.Is(err, cache.ErrRequeue) {
		t.Fatalf("Pop error = %v", err)
	}
	want := []popped{
		{Key: "ns/b", Deltas: []string{"Added:1"}},
		{Key: "ns/a", Deltas: []string{"Added:1"}},
	}
	if d := cmp.Diff(want, popAll(t, f, nil)); d != "" {
		t.Errorf("-want +got:\n%s", d)
	}
}

func TestDeltaFIFOPopStopsOnContextAndClose(t *testing.T) {
	f := newFIFO(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- f.Pop(ctx, func(cache.Deltas[*corev1.Pod], bool) error { return nil }) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Pop after cancel = %v", err)
	}
	go func() {
		done <- f.Pop(context.Background(), func(cache.Deltas[*corev1.Pod], bool) error { return nil })
	}()
	f.Close()
	if err := <-done; !errors.Is(err, cache.ErrFIFOClosed) {
		t.Errorf("Pop after close = %v", err)
	}
}

func TestDeltaFIFOTransform(t *testing.T) {
	f, err := cache.NewDeltaFIFO(cache.DeltaFIFOConfig[*corev1.Pod]{Transform: func(p *corev1.Pod) (*corev1.Pod, error) {
		if p.Name == "bad" {
			return nil, errors.New("nope")
		}
		c := p.DeepCopy()
		c.ManagedFields = nil
		c.ResourceVersion += "t"
		return c, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Add(pod("ns", "bad", "1")); err == nil {
		t.Error("failing transform: no error")
	}
	_ = f.Add(pod("ns", "a", "1"))
	want := []popped{{Key: "ns/a", Deltas: []string{"Added:1t"}}}
	if d := cmp.Diff(want, popAll(t, f, nil)); d != "" {
		t.Errorf("-want +got:\n%s", d)
	}
}

func TestDeltaFIFOProducersDoNotWaitForProcessing(t *testing.T) {
	store := newIndexer(t)
	f := newFIFO(t, store)
	if err := f.Replace([]*corev1.Pod{pod("ns", "a", "1")}); err != nil {
		t.Fatal(err)
	}
	err := f.Pop(context.Background(), func(d cache.Deltas[*corev1.Pod], initial bool) error {
		// While a is being processed (popped, not yet stored): a producer
		// is not blocked, a delete of a is kept, and the FIFO is not synced.
		done := make(chan error)
		go func() { done <- f.Delete(pod("ns", "a", "2")) }()
		if err := <-done; err != nil {
			t.Error(err)
		}
		if f.HasSynced() {
			t.Error("synced before the initial list was processed")
		}
		if !initial {
			t.Error("initial list not flagged")
		}
		return store.Add(d[0].Object)
	})
	if err != nil {
		t.Fatal(err)
	}
	if !f.HasSynced() {
		t.Error("not synced after processing the initial list")
	}
	want := []popped{{Key: "ns/a", Deltas: []string{"Deleted:2"}}}
	if d := cmp.Diff(want, popAll(t, f, nil)); d != "" {
		t.Errorf("-want +got:\n%s", d)
	}
}

// Consecutive deletes of one key collapse as client-go's isDeletionDup
// decides: the older stays unless it is a tombstone.
func TestDeltaFIFOCollapsesDeletesAsClientGo(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  func(f *cache.DeltaFIFO[*corev1.Pod])
		want []string
	}{
		{"two observed deletes keep the older", func(f *cache.DeltaFIFO[*corev1.Pod]) {
			_ = f.Delete(pod("ns", "a", "2"))
			_ = f.Delete(pod("ns", "a", "3"))
		}, []string{"Deleted:2"}},
		{"an observed delete then a tombstone keep the observed one", func(f *cache.DeltaFIFO[*corev1.Pod]) {
			_ = f.Delete(pod("ns", "a", "2"))
			_ = f.Replace(nil)
		}, []string{"Deleted:2"}},
		{"a tombstone then an observed delete keep the observed one", func(f *cache.DeltaFIFO[*corev1.Pod]) {
			_ = f.Replace(nil)
			_ = f.Delete(pod("ns", "a", "3"))
		}, []string{"Deleted:3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := newIndexer(t)
			_ = store.Add(pod("ns", "a", "1"))
			f := newFIFO(t, store)
			tc.ops(f)
			got := popAll(t, f, nil)
			if len(got) != 1 || !cmp.Equal(got[0].Deltas, tc.want) {
				t.Fatalf("popped %+v, want ns/a with %v", got, tc.want)
			}
		})
	}
}

// KeyOf files objects, their Deltas and tombstones as client-go's KeyOf
// does: a tombstone's Key is used as it is, even when it differs from the
// key of the object it holds.
func TestDeltaFIFOKeyOf(t *testing.T) {
	f := newFIFO(t, nil)
	p := pod("ns", "a", "1")
	tomb := cache.DeletedFinalStateUnknown[*corev1.Pod]{Key: "ns/gone", Obj: p}
	for _, tc := range []struct {
		name string
		obj  any
		want string
	}{
		{"object", p, "ns/a"},
		{"cluster-scoped object", pod("", "n", "1"), "n"},
		{"tombstone", tomb, "ns/gone"},
		{"tombstone pointer", &tomb, "ns/gone"},
		{"deltas", cache.Deltas[*corev1.Pod]{{Type: cache.Added, Object: pod("ns", "old", "1")}, {Type: cache.Updated, Object: p}}, "ns/a"},
		{"deltas ending in a tombstone", cache.Deltas[*corev1.Pod]{{Type: cache.Deleted, Object: p, Tombstone: &tomb}}, "ns/gone"},
	} {
		got, err := f.KeyOf(tc.obj)
		if err != nil || got != tc.want {
			t.Errorf("%s: KeyOf = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	for _, bad := range []any{cache.Deltas[*corev1.Pod]{}, (*corev1.Pod)(nil), pod("ns", "", "1"), "ns/a", (*cache.DeletedFinalStateUnknown[*corev1.Pod])(nil)} {
		if key, err := f.KeyOf(bad); err == nil {
			t.Errorf("KeyOf(%#v) = %q, want an error", bad, key)
		}
	}
}

func TestDeltaFIFOIsClosed(t *testing.T) {
	f := newFIFO(t, nil)
	if f.IsClosed() {
		t.Fatal("new FIFO reports closed")
	}
	_ = f.Add(pod("ns", "a", "1"))
	f.Close()
	f.Close()
	if !f.IsClosed() {
		t.Fatal("IsClosed false after Close")
	}
	// As client-go's, Close does not stop producers or the queued keys.
	_ = f.Add(pod("ns", "b", "1"))
	if got := popAll(t, f, nil); len(got) != 2 {
		t.Fatalf("popped %+v after Close, want a and b", got)
	}
	err := f.Pop(context.Background(), func(cache.Deltas[*corev1.Pod], bool) error { return nil })
	if !errors.Is(err, cache.ErrFIFOClosed) {
		t.Fatalf("Pop on a closed empty FIFO = %v, want ErrFIFOClosed", err)
	}
}

func TestDeltasOldestNewest(t *testing.T) {
	var none cache.Deltas[*corev1.Pod]
	if _, ok := none.Oldest(); ok {
		t.Error("Oldest of no deltas reported one")
	}
	if _, ok := none.Newest(); ok {
		t.Error("Newest of no deltas reported one")
	}
	d := cache.Deltas[*corev1.Pod]{{Type: cache.Added, Object: pod("ns", "a", "1")}, {Type: cache.Updated, Object: pod("ns", "a", "2")}}
	if o, _ := d.Oldest(); o.Type != cache.Added {
		t.Errorf("Oldest = %v, want Added", o.Type)
	}
	if n, _ := d.Newest(); n.Type != cache.Updated {
		t.Errorf("Newest = %v, want Updated", n.Type)
	}
}

// As in client-go, a delete the FIFO drops (of an object neither known nor
// queued) never reaches the Transform; every change it keeps does once.
func TestDeltaFIFOTransformSkipsDroppedDeletes(t *testing.T) {
	var seen []string
	f, err := cache.NewDeltaFIFO(cache.DeltaFIFOConfig[*corev1.Pod]{
		Transform: func(p *corev1.Pod) (*corev1.Pod, error) {
			seen = append(seen, p.Name+":"+p.ResourceVersion)
			return p, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = f.Delete(pod("ns", "unknown", "1")) // dropped
	_ = f.Add(pod("ns", "a", "2"))
	_ = f.Delete(pod("ns", "a", "3")) // kept: a is queued
	if diff := cmp.Diff([]string{"a:2", "a:3"}, seen); diff != "" {
		t.Errorf("transformed (-want +got):\n%s", diff)
	}
	if !f.HasSynced() {
		t.Error("a dropped delete first did not count as populating, as in client-go")
	}
}
