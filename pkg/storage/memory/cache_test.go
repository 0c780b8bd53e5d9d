package memory_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kplane/kplane/pkg/storage"
	"github.com/kplane/kplane/pkg/storage/memory"
)

// scribble changes every part of a ConfigMap a shared object would expose.
func scribble(o *corev1.ConfigMap) {
	o.Name = "scribbled"
	o.ResourceVersion = "1"
	if o.Data == nil {
		o.Data = map[string]string{}
	}
	o.Data["v"] = "scribbled"
	o.Data["extra"] = "scribbled"
	if o.Labels == nil {
		o.Labels = map[string]string{}
	}
	o.Labels["scribbled"] = "yes"
}

// getCM returns the ConfigMap at /configmaps/ns/name.
func getCM(t *testing.T, s storage.Interface, name string) *corev1.ConfigMap {
	t.Helper()
	out := &corev1.ConfigMap{}
	if err := s.Get(context.Background(), "/configmaps/ns/"+name, storage.GetOptions{}, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReadsHandOutPrivateCopies changes every object the store hands out and
// checks that no later read sees the change: reads are served from decoded
// objects kept next to the bytes, which must never leak.
func TestReadsHandOutPrivateCopies(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t, memory.Config{})
	s := configMaps(t, b)
	key := "/configmaps/ns/a"
	obj := cm("a", "1")
	obj.Labels = map[string]string{"app": "x"}
	created := &corev1.ConfigMap{}
	if err := s.Create(ctx, key, obj, created); err != nil {
		t.Fatal(err)
	}
	want := created.DeepCopy()
	check := func(step string) {
		t.Helper()
		if diff := cmp.Diff(want, getCM(t, s, "a")); diff != "" {
			t.Fatalf("after %s, Get (-want +got):\n%s", step, diff)
		}
		l := &corev1.ConfigMapList{}
		if err := s.GetList(ctx, "/configmaps/ns", storage.ListOptions{Recursive: true}, l); err != nil {
			t.Fatal(err)
		}
		if len(l.Items) != 1 {
			t.Fatalf("after %s, listed %d items", step, len(l.Items))
		}
		if diff := cmp.Diff(*want, l.Items[0]); diff != "" {
			t.Fatalf("after %s, GetList (-want +got):\n%s", step, diff)
		}
	}

	scribble(created)
	check("changing Create's out")

	scribble(getCM(t, s, "a"))
	check("changing Get's out")
	scribble(getCM(t, s, "a")) // the second Get is served from the cache
	check("changing a cached Get's out")

	for range 2 {
		l := &corev1.ConfigMapList{}
		if err := s.GetList(ctx, "/configmaps/ns", storage.ListOptions{Recursive: true}, l); err != nil {
			t.Fatal(err)
		}
		scribble(&l.Items[0])
		check("changing GetList's items")
	}

	boom := errors.New("boom")
	err := s.GuaranteedUpdate(ctx, key, &corev1.ConfigMap{}, false, nil, func(cur runtime.Object) (runtime.Object, error) {
		scribble(cur.(*corev1.ConfigMap))
		return nil, boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("GuaranteedUpdate: got %v, want %v", err, boom)
	}
	check("changing tryUpdate's current and failing")

	dest := &corev1.ConfigMap{}
	err = s.GuaranteedUpdate(ctx, key, dest, false, nil, func(cur runtime.Object) (runtime.Object, error) {
		return cur, nil // no change: nothing is written
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, dest); diff != "" {
		t.Fatalf("no-op GuaranteedUpdate dest (-want +got):\n%s", diff)
	}
	scribble(dest)
	check("changing a no-op GuaranteedUpdate's dest")

	w, err := s.Watch(ctx, key, storage.ListOptions{ResourceVersion: ""})
	if err != nil {
		t.Fatal(err)
	}
	ev, ok := next(t, w)
	w.Stop()
	if !ok {
		t.Fatal("watch closed before its initial event")
	}
	scribble(ev.Object.(*corev1.ConfigMap))
	check("changing a watch's initial event")

	dest = &corev1.ConfigMap{}
	err = s.GuaranteedUpdate(ctx, key, dest, false, nil, func(cur runtime.Object) (runtime.Object, error) {
		cur.(*corev1.ConfigMap).Data["v"] = "2"
		return cur, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want = dest.DeepCopy()
	scribble(dest)
	check("changing GuaranteedUpdate's dest")

	out := &corev1.ConfigMap{}
	if err := s.Delete(ctx, key, out, nil, func(_ context.Context, cur runtime.Object) error {
		scribble(cur.(*corev1.ConfigMap))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	rv, err := storage.ObjectResourceVersion(out)
	if err != nil {
		t.Fatal(err)
	}
	want.ResourceVersion = strconv.FormatUint(rv, 10)
	if diff := cmp.Diff(want, out); diff != "" {
		t.Fatalf("Delete's out, whose validate changed its current (-want +got):\n%s", diff)
	}
}

// TestReadsFollowWrites interleaves reads, which keep decoded objects, with
// writes, and checks every read against the newest write or, for exact and
// paged lists, against the snapshot asked for.
func TestReadsFollowWrites(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t, memory.Config{})
	s := configMaps(t, b)
	const n = 5
	names := []string{"a", "b", "c", "d", "e"}
	revs := map[uint64]map[string]string{} // revision -> name -> value
	state := map[string]string{}
	var lastRev uint64
	write := func(name, v string) {
		lastRev = put(t, s, name, v)
		state[name] = v
		snap := map[string]string{}
		for k, v := range state {
			snap[k] = v
		}
		revs[lastRev] = snap
	}
	listAt := func(opts storage.ListOptions) (map[string]string, uint64) {
		t.Helper()
		got := map[string]string{}
		var rv uint64
		for {
			l := &corev1.ConfigMapList{}
			if err := s.GetList(ctx, "/configmaps/ns", opts, l); err != nil {
				t.Fatal(err)
			}
			for _, it := range l.Items {
				got[it.Name] = it.Data["v"]
			}
			if rv == 0 {
				rv, _ = strconv.ParseUint(l.ResourceVersion, 10, 64)
			}
			if l.Continue == "" {
				return got, rv
			}
			opts.Predicate.Continue = l.Continue
			opts.ResourceVersion = ""
		}
	}
	for round := range 4 {
		for i, name := range names {
			write(name, strconv.Itoa(round*n+i))
			if round > 0 && i%2 == 0 {
				continue
			}
			if got := getCM(t, s, name).Data["v"]; got != state[name] {
				t.Fatalf("round %d: Get %s = %q, want %q", round, name, got, state[name])
			}
		}
		got, rv := listAt(storage.ListOptions{Recursive: true})
		if diff := cmp.Diff(state, got); diff != "" || rv != lastRev {
			t.Fatalf("round %d: list at %d, want %d (-want +got):\n%s", round, rv, lastRev, diff)
		}
		// A paged list started now must not see the writes made between its pages.
		l := &corev1.ConfigMapList{}
		if err := s.GetList(ctx, "/configmaps/ns", storage.ListOptions{Recursive: true, Predicate: storage.Predicate{Limit: 2}}, l); err != nil {
			t.Fatal(err)
		}
		pageRev, _ := strconv.ParseUint(l.ResourceVersion, 10, 64)
		first := map[string]string{}
		for _, it := range l.Items {
			first[it.Name] = it.Data["v"]
		}
		write("c", "between pages")
		rest, _ := listAt(storage.ListOptions{Recursive: true, Predicate: storage.Predicate{Limit: 2, Continue: l.Continue}})
		for k, v := range rest {
			first[k] = v
		}
		if diff := cmp.Diff(revs[pageRev], first); diff != "" {
			t.Fatalf("round %d: paged list at %d (-want +got):\n%s", round, pageRev, diff)
		}
	}
	for rev, want := range revs {
		got, _ := listAt(storage.ListOptions{Recursive: true, ResourceVersion: strconv.FormatUint(rev, 10), ResourceVersionMatch: metav1.ResourceVersionMatchExact})
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("exact list at %d (-want +got):\n%s", rev, diff)
		}
	}
	// A key's newest version, cached by the reads above, is still its newest after a delete.
	if err := s.Delete(ctx, "/configmaps/ns/a", &corev1.ConfigMap{}, nil, nil); err != nil {
		t.Fatal(err)
	}
	err := s.Get(ctx, "/configmaps/ns/a", storage.GetOptions{}, &corev1.ConfigMap{})
	if !storage.IsNotFound(err) {
		t.Fatalf("Get after Delete: got %v, want not found", err)
	}
}

// upperCodec stores like JSONCodec but decodes every Data value upper-cased,
// so that objects decoded by it differ from JSONCodec's.
type upperCodec struct{ storage.JSONCodec }

func (c upperCodec) Decode(data []byte, into runtime.Object) error {
	if err := c.JSONCodec.Decode(data, into); err != nil {
		return err
	}
	if o, ok := into.(*corev1.ConfigMap); ok {
		for k, v := range o.Data {
			o.Data[k] = strings.ToUpper(v)
		}
	}
	return nil
}

// TestStoresDecodeForThemselves reads one key through stores with different
// codecs and into other types: each read is what its own store's codec
// decodes, whichever store read the key last.
func TestStoresDecodeForThemselves(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t, memory.Config{})
	plain := configMaps(t, b)
	upper, err := b.Storage(storage.ResourceConfig{
		Codec:       upperCodec{},
		NewFunc:     func() runtime.Object { return &corev1.ConfigMap{} },
		NewListFunc: func() runtime.Object { return &corev1.ConfigMapList{} },
	})
	if err != nil {
		t.Fatal(err)
	}
	put(t, plain, "a", "low")
	for i := range 3 {
		if got := getCM(t, plain, "a").Data["v"]; got != "low" {
			t.Fatalf("read %d: plain store got %q", i, got)
		}
		if got := getCM(t, upper, "a").Data["v"]; got != "LOW" {
			t.Fatalf("read %d: upper-casing store got %q", i, got)
		}
		l := &corev1.ConfigMapList{}
		if err := upper.GetList(ctx, "/configmaps/ns", storage.ListOptions{Recursive: true}, l); err != nil {
			t.Fatal(err)
		}
		if got := l.Items[0].Data["v"]; len(l.Items) != 1 || got != "LOW" {
			t.Fatalf("read %d: upper-casing store listed %q", i, got)
		}
		meta := &metav1.PartialObjectMetadata{}
		if err := plain.Get(ctx, "/configmaps/ns/a", storage.GetOptions{}, meta); err != nil {
			t.Fatal(err)
		}
		if meta.Name != "a" || meta.ResourceVersion == "" {
			t.Fatalf("read %d: metadata only: %+v", i, meta.ObjectMeta)
		}
	}
}

// TestUpdatesThatEncodeTheSameWriteNothing: an update whose result encodes
// to the stored bytes, though the objects differ, is no write, and one that
// changes only digits equal to the revisions is one.
func TestUpdatesThatEncodeTheSameWriteNothing(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t, memory.Config{})
	s := configMaps(t, b)
	key := "/configmaps/ns/a"
	rv := put(t, s, "a", "1")
	getCM(t, s, "a") // the key is decoded from here on
	for i, f := range []func(*corev1.ConfigMap){
		func(*corev1.ConfigMap) {},
		func(o *corev1.ConfigMap) { o.ResourceVersion = "12345" },
		func(o *corev1.ConfigMap) { o.Labels = map[string]string{} }, // omitempty: encodes as nil
	} {
		dest := &corev1.ConfigMap{}
		err := s.GuaranteedUpdate(ctx, key, dest, false, nil, func(cur runtime.Object) (runtime.Object, error) {
			f(cur.(*corev1.ConfigMap))
			return cur, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := storage.ObjectResourceVersion(dest); got != rv {
			t.Fatalf("no-op update %d: resourceVersion %d, want %d", i, got, rv)
		}
		if cur, _ := b.CurrentRevision(ctx); cur != rv {
			t.Fatalf("no-op update %d: revision moved to %d from %d", i, cur, rv)
		}
	}
	// A value that holds the current revision's digits, changed to the next
	// revision's: the encodings differ in two places.
	put(t, s, "a", strconv.FormatUint(rv, 10))
	rv++
	next := put(t, s, "a", strconv.FormatUint(rv+1, 10))
	if next != rv+1 || getCM(t, s, "a").Data["v"] != strconv.FormatUint(rv+1, 10) {
		t.Fatalf("update to the next revision's digits: revision %d, object %+v", next, getCM(t, s, "a"))
	}
}
