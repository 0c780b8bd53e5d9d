package etcd

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kplane/kplane/pkg/storage"
)

// GuaranteedUpdateFrom gives GuaranteedUpdate's result whether the cached
// state it starts from is current or stale: every decision made on a stale
// one (a precondition, tryUpdate's verdict, a no-op) is made again on the
// stored state, and a current one is written without a read.
func TestGuaranteedUpdateFromCachedState(t *testing.T) {
	ctx := context.Background()
	b := newTestBackend(t, Config{})
	si, err := b.Storage(cmConfig)
	if err != nil {
		t.Fatal(err)
	}
	s := si.(storage.CachedUpdater)
	const key = "/configmaps/ns/a"
	v1 := &corev1.ConfigMap{}
	if err := si.Create(ctx, key, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "u1"}, Data: map[string]string{"n": "1"}}, v1); err != nil {
		t.Fatal(err)
	}
	set := func(n string) storage.UpdateFunc {
		return func(cur runtime.Object) (runtime.Object, error) {
			cm := cur.(*corev1.ConfigMap)
			cm.Data = map[string]string{"n": n}
			return cm, nil
		}
	}
	v2 := &corev1.ConfigMap{}
	if err := s.GuaranteedUpdateFrom(ctx, key, v2, false, nil, set("2"), v1); err != nil {
		t.Fatal(err)
	}
	if v2.Data["n"] != "2" || v2.ResourceVersion == v1.ResourceVersion {
		t.Fatalf("update from a current cache: %v at %s", v2.Data, v2.ResourceVersion)
	}
	if v1.Data["n"] != "1" {
		t.Errorf("the cached object was changed: %v", v1.Data)
	}

	// Stale (v1 while v2 is stored): tryUpdate sees the stored state.
	var seen []string
	inc := func(cur runtime.Object) (runtime.Object, error) {
		cm := cur.(*corev1.ConfigMap)
		seen = append(seen, cm.Data["n"])
		cm.Data = map[string]string{"n": cm.Data["n"] + "+"}
		return cm, nil
	}
	v3 := &corev1.ConfigMap{}
	if err := s.GuaranteedUpdateFrom(ctx, key, v3, false, nil, inc, v1); err != nil {
		t.Fatal(err)
	}
	if v3.Data["n"] != "2+" {
		t.Errorf("update from a stale cache wrote %q, want 2+ (tryUpdate saw %v)", v3.Data["n"], seen)
	}

	// A no-op on the stale state is a change on the stored one.
	v4 := &corev1.ConfigMap{}
	if err := s.GuaranteedUpdateFrom(ctx, key, v4, false, nil, set("1"), v1); err != nil {
		t.Fatal(err)
	}
	if v4.Data["n"] != "1" || v4.ResourceVersion == v3.ResourceVersion {
		t.Errorf("a no-op on the stale state was not written: %v at %s (was %s)", v4.Data, v4.ResourceVersion, v3.ResourceVersion)
	}
	// A no-op on the current state writes nothing.
	v5 := &corev1.ConfigMap{}
	if err := s.GuaranteedUpdateFrom(ctx, key, v5, false, nil, set("1"), v4); err != nil {
		t.Fatal(err)
	}
	if v5.ResourceVersion != v4.ResourceVersion {
		t.Errorf("a no-op wrote revision %s over %s", v5.ResourceVersion, v4.ResourceVersion)
	}

	// tryUpdate refusing the stale state (as the API server refuses a
	// request naming a newer resourceVersion) is asked again on the stored.
	want := v5.ResourceVersion
	calls := 0
	onlyCurrent := func(cur runtime.Object) (runtime.Object, error) {
		calls++
		cm := cur.(*corev1.ConfigMap)
		if cm.ResourceVersion != want {
			return nil, errors.New("stale")
		}
		cm.Data = map[string]string{"n": "6"}
		return cm, nil
	}
	v6 := &corev1.ConfigMap{}
	if err := s.GuaranteedUpdateFrom(ctx, key, v6, false, nil, onlyCurrent, v1); err != nil {
		t.Fatalf("refusal of the stale state was returned: %v", err)
	}
	if calls != 2 || v6.Data["n"] != "6" {
		t.Errorf("tryUpdate called %d times, wrote %v", calls, v6.Data)
	}
	// On the stored state, its error is the answer.
	if err := s.GuaranteedUpdateFrom(ctx, key, &corev1.ConfigMap{}, false, nil, onlyCurrent, v6); err == nil || err.Error() != "stale" {
		t.Errorf("tryUpdate's error on the stored state: %v", err)
	}

	// A precondition that fails on the stale state but holds on the stored.
	other := v1.DeepCopy()
	other.UID = "u0"
	uid := types.UID("u1")
	v7 := &corev1.ConfigMap{}
	if err := s.GuaranteedUpdateFrom(ctx, key, v7, false, &storage.Preconditions{UID: &uid}, set("7"), other); err != nil {
		t.Fatalf("precondition checked on the stale state only: %v", err)
	}
	// And one that fails on the stored state fails.
	bad := types.UID("u9")
	err = s.GuaranteedUpdateFrom(ctx, key, &corev1.ConfigMap{}, false, &storage.Preconditions{UID: &bad}, set("8"), v7)
	if err == nil {
		t.Error("a failing precondition was ignored")
	}
	got := &corev1.ConfigMap{}
	if err := si.Get(ctx, key, storage.GetOptions{}, got); err != nil {
		t.Fatal(err)
	}
	if got.Data["n"] != "7" || got.ResourceVersion != v7.ResourceVersion {
		t.Errorf("stored %v at %s, want 7 at %s", got.Data, got.ResourceVersion, v7.ResourceVersion)
	}

	// A cached object without a usable resourceVersion is read past.
	noRV := v7.DeepCopy()
	noRV.ResourceVersion = ""
	v9 := &corev1.ConfigMap{}
	if err := s.GuaranteedUpdateFrom(ctx, key, v9, false, nil, inc, noRV); err != nil {
		t.Fatal(err)
	}
	if v9.Data["n"] != "7+" {
		t.Errorf("update past a cached object without resourceVersion wrote %v", v9.Data)
	}
}

// A watch with NoPrevObject that selects everything sends Modified events
// without the previous state (not decoded), and Deleted events with it; a
// watch without it, or with a selector, keeps PrevObject on Modified.
func TestWatchNoPrevObject(t *testing.T) {
	ctx := context.Background()
	b := newTestBackend(t, Config{})
	s, err := b.Storage(cmConfig)
	if err != nil {
		t.Fatal(err)
	}
	start := &corev1.ConfigMap{}
	if err := s.Create(ctx, "/configmaps/ns/start", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "start"}}, start); err != nil {
		t.Fatal(err)
	}
	open := func(noPrev bool) storage.Watcher {
		w, err := s.Watch(ctx, "/configmaps", storage.ListOptions{Recursive: true, ResourceVersion: start.ResourceVersion, NoPrevObject: noPrev})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
		return w
	}
	full, lean := open(false), open(true)
	const key = "/configmaps/ns/a"
	if err := s.Create(ctx, key, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}, Data: map[string]string{"n": "1"}}, &corev1.ConfigMap{}); err != nil {
		t.Fatal(err)
	}
	if err := s.GuaranteedUpdate(ctx, key, &corev1.ConfigMap{}, false, nil, func(cur runtime.Object) (runtime.Object, error) {
		cur.(*corev1.ConfigMap).Data = map[string]string{"n": "2"}
		return cur, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, key, &corev1.ConfigMap{}, nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		w        storage.Watcher
		wantPrev bool
	}{{"without NoPrevObject", full, true}, {"with NoPrevObject", lean, false}} {
		var got []string
		for len(got) < 3 {
			ev := <-tc.w.ResultChan()
			prev := "-"
			if cm, ok := ev.PrevObject.(*corev1.ConfigMap); ok && cm != nil {
				prev = cm.Data["n"]
			}
			got = append(got, string(ev.Type)+":"+prev)
		}
		want := []string{"ADDED:-", "MODIFIED:-", "DELETED:2"}
		if tc.wantPrev {
			want[1] = "MODIFIED:1"
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s: events %v, want %v", tc.name, got, want)
		}
	}
}
