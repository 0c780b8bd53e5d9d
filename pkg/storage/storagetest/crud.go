package storagetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kplane/kplane/pkg/storage"
)

var crudTests = []test{
	{name: "CreateGet", run: testCreateGet},
	{name: "CreateExists", run: testCreateExists},
	{name: "CreateRejectsResourceVersion", run: testCreateRejectsRV},
	{name: "GetNotFound", run: testGetNotFound},
	{name: "GetResourceVersion", run: testGetResourceVersion},
	{name: "InvalidKeys", run: testInvalidKeys},
	{name: "RevisionsShared", run: testRevisionsShared},
	{name: "Update", run: testUpdate},
	{name: "UpdateNoOp", run: testUpdateNoOp},
	{name: "UpdateNotFound", run: testUpdateNotFound},
	{name: "UpdatePreconditions", run: testUpdatePreconditions},
	{name: "UpdateFuncError", run: testUpdateFuncError},
	{name: "UpdateRetriesOnConflict", run: testUpdateRetries},
	{name: "Delete", run: testDelete},
	{name: "DeletePreconditions", run: testDeletePreconditions},
	{name: "DeleteValidate", run: testDeleteValidate},
	{name: "DeleteRetriesOnConflict", run: testDeleteRetries},
	{name: "RecreateAfterDelete", run: testRecreate},
}

func testCreateGet(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	in := newCM("ns", "a", "1", map[string]string{"app": "x"})
	orig := in.DeepCopy()
	out := create(t, s, in)
	diff(t, "Create must not change its input", orig, in)
	rv := rvOf(t, out)
	if cur := currentRev(t, b); cur != rv {
		t.Errorf("CurrentRevision = %d after a create at %d", cur, rv)
	}
	want := orig.DeepCopy()
	want.ResourceVersion = rvString(rv)
	diff(t, "created object", want, out)

	got := &corev1.ConfigMap{}
	if err := s.Get(context.Background(), cmKey("ns", "a"), storage.GetOptions{}, got); err != nil {
		t.Fatalf("Get: %v", err)
	}
	diff(t, "Get", want, got)

	// Each write gets a new, strictly greater revision.
	out2 := create(t, s, newCM("ns", "b", "1", nil))
	if rv2 := rvOf(t, out2); rv2 <= rv {
		t.Errorf("second create got revision %d, not after %d", rv2, rv)
	}
}

func testCreateExists(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	first := create(t, s, newCM("ns", "a", "1", nil))
	rev := currentRev(t, b)
	err := s.Create(context.Background(), cmKey("ns", "a"), newCM("ns", "a", "2", nil), &corev1.ConfigMap{})
	wantCode(t, err, storage.ErrCodeKeyExists, "second Create")
	if !storage.IsExists(err) {
		t.Errorf("IsExists(%v) = false", err)
	}
	got := &corev1.ConfigMap{}
	if err := s.Get(context.Background(), cmKey("ns", "a"), storage.GetOptions{}, got); err != nil {
		t.Fatal(err)
	}
	diff(t, "object after a failed create", first, got)
	if cur := currentRev(t, b); cur != rev {
		t.Errorf("a failed create moved the revision from %d to %d", rev, cur)
	}
}

func testCreateRejectsRV(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	cm := newCM("ns", "a", "1", nil)
	cm.ResourceVersion = "5"
	err := s.Create(context.Background(), cmKey("ns", "a"), cm, &corev1.ConfigMap{})
	wantCode(t, err, storage.ErrCodeInvalidRequest, "Create of an object with a resourceVersion")
	err = s.Get(context.Background(), cmKey("ns", "a"), storage.GetOptions{}, &corev1.ConfigMap{})
	wantCode(t, err, storage.ErrCodeKeyNotFound, "Get after a rejected create")
}

func testGetNotFound(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	err := s.Get(context.Background(), cmKey("ns", "missing"), storage.GetOptions{}, &corev1.ConfigMap{})
	if !storage.IsNotFound(err) {
		t.Fatalf("Get of a missing key: %v, want not found", err)
	}
	out := newCM("junk", "junk", "junk", nil)
	if err := s.Get(context.Background(), cmKey("ns", "missing"), storage.GetOptions{IgnoreNotFound: true}, out); err != nil {
		t.Fatalf("Get with IgnoreNotFound: %v", err)
	}
	diff(t, "IgnoreNotFound leaves a zero object", &corev1.ConfigMap{}, out)
}

func testGetResourceVersion(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	c := create(t, s, newCM("ns", "a", "1", nil))
	rv := rvOf(t, c)
	for _, tc := range []struct {
		name, rv string
		code     storage.ErrorCode // 0: success
	}{
		{"newest", "", 0},
		{"any", "0", 0},
		{"at least current", rvString(rv), 0},
		{"at least older", rvString(rv - 1), 0},
		{"too large", rvString(rv + 100), storage.ErrCodeTooLargeResourceVersion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := &corev1.ConfigMap{}
			err := s.Get(context.Background(), cmKey("ns", "a"), storage.GetOptions{ResourceVersion: tc.rv}, got)
			if tc.code != 0 {
				wantCode(t, err, tc.code, "Get")
				return
			}
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			diff(t, "Get", c, got)
		})
	}
	for _, bad := range []string{"abc", "-1", "1.5", " 1", "18446744073709551616"} {
		err := s.Get(context.Background(), cmKey("ns", "a"), storage.GetOptions{ResourceVersion: bad}, &corev1.ConfigMap{})
		wantCode(t, err, storage.ErrCodeInvalidRequest, fmt.Sprintf("Get with resourceVersion %q", bad))
	}
}

func testInvalidKeys(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	ctx := context.Background()
	create(t, s, newCM("ns", "a", "1", nil))
	rev := currentRev(t, b)
	for _, key := range []string{"", "configmaps/ns/a", "/configmaps/../secrets/x", "/configmaps/ns/..", "/configmaps//a", "/configmaps/./a", "/configmaps/ns/a/", "/configmaps/ns/a\x00"} {
		t.Run(strings.ReplaceAll(key, "/", "|"), func(t *testing.T) {
			invalid := func(err error, what string) {
				t.Helper()
				wantCode(t, err, storage.ErrCodeInvalidRequest, what)
			}
			invalid(s.Create(ctx, key, newCM("ns", "z", "1", nil), &corev1.ConfigMap{}), "Create")
			invalid(s.Get(ctx, key, storage.GetOptions{}, &corev1.ConfigMap{}), "Get")
			invalid(s.GuaranteedUpdate(ctx, key, &corev1.ConfigMap{}, true, nil, func(cur runtime.Object) (runtime.Object, error) { return cur, nil }), "GuaranteedUpdate")
			invalid(s.Delete(ctx, key, &corev1.ConfigMap{}, nil, nil), "Delete")
			if key != "/configmaps/ns/a/" {
				invalid(s.GetList(ctx, key, storage.ListOptions{Recursive: true}, &corev1.ConfigMapList{}), "GetList")
				w, err := s.Watch(ctx, key, storage.ListOptions{Recursive: true})
				if err == nil {
					w.Stop()
				}
				invalid(err, "Watch")
			}
		})
	}
	if cur := currentRev(t, b); cur != rev {
		t.Errorf("invalid keys moved the revision from %d to %d", rev, cur)
	}
	l := list(t, s, "/configmaps", storage.ListOptions{})
	diff(t, "objects after invalid requests", []string{"ns/a=1"}, names(l.Items))
}

func testRevisionsShared(t *testing.T, b storage.Backend) {
	cms, ps := configMaps(t, b), pods(t, b)
	c1 := create(t, cms, newCM("ns", "a", "1", nil))
	p := &corev1.Pod{}
	if err := ps.Create(context.Background(), podKey("ns", "a"), newPod("ns", "a", "", nil), p); err != nil {
		t.Fatal(err)
	}
	c2 := create(t, cms, newCM("ns", "b", "1", nil))
	r1, r2, r3 := rvOf(t, c1), rvOf(t, p), rvOf(t, c2)
	if !(r1 < r2 && r2 < r3) {
		t.Errorf("revisions across resources are not increasing: %d, %d, %d", r1, r2, r3)
	}
	// A list of one resource does not see the other.
	if l := list(t, cms, "/configmaps", storage.ListOptions{}); len(l.Items) != 2 {
		t.Errorf("configmaps list has %d items, want 2", len(l.Items))
	}
}

func testUpdate(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	c := create(t, s, newCM("ns", "a", "1", nil))
	u := update(t, s, "ns", "a", "2")
	if rvOf(t, u) <= rvOf(t, c) {
		t.Errorf("update revision %s not after create revision %s", u.ResourceVersion, c.ResourceVersion)
	}
	if cur := currentRev(t, b); cur != rvOf(t, u) {
		t.Errorf("CurrentRevision %d, want %d", cur, rvOf(t, u))
	}
	want := c.DeepCopy()
	want.Data["v"] = "2"
	want.ResourceVersion = u.ResourceVersion
	diff(t, "updated object", want, u)
	got := &corev1.ConfigMap{}
	if err := s.Get(context.Background(), cmKey("ns", "a"), storage.GetOptions{}, got); err != nil {
		t.Fatal(err)
	}
	diff(t, "Get after update", want, got)

	// The update function gets the stored state, with its resourceVersion.
	var seen string
	updateFn(t, s, "ns", "a", func(cm *corev1.ConfigMap) { seen = cm.ResourceVersion; cm.Data["v"] = "3" })
	if seen != u.ResourceVersion {
		t.Errorf("update function saw resourceVersion %q, want %q", seen, u.ResourceVersion)
	}
	// A resourceVersion the update function sets is ignored.
	u4 := updateFn(t, s, "ns", "a", func(cm *corev1.ConfigMap) { cm.ResourceVersion = "1"; cm.Data["v"] = "4" })
	if rvOf(t, u4) != currentRev(t, b) {
		t.Errorf("stored resourceVersion %s, want the write's revision %d", u4.ResourceVersion, currentRev(t, b))
	}
}

func testUpdateNoOp(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	c := create(t, s, newCM("ns", "a", "1", nil))
	rev := currentRev(t, b)
	w, err := s.Watch(context.Background(), cmKey("ns", "a"), storage.ListOptions{ResourceVersion: c.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	u := updateFn(t, s, "ns", "a", func(cm *corev1.ConfigMap) {})
	diff(t, "no-op update result", c, u)
	if cur := currentRev(t, b); cur != rev {
		t.Errorf("a no-op update moved the revision from %d to %d", rev, cur)
	}
	// The watch sees the next real change, not the no-op.
	u2 := update(t, s, "ns", "a", "2")
	e := nextEvent(t, w)
	if e.Type != "MODIFIED" || rvOf(t, e.Object) != rvOf(t, u2) {
		t.Errorf("after a no-op update the watch got %s at %s, want MODIFIED at %s", e.Type, rvOfString(e.Object), u2.ResourceVersion)
	}
}

func testUpdateNotFound(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	ctx := context.Background()
	called := false
	err := s.GuaranteedUpdate(ctx, cmKey("ns", "a"), &corev1.ConfigMap{}, false, nil, func(cur runtime.Object) (runtime.Object, error) {
		called = true
		return cur, nil
	})
	if !storage.IsNotFound(err) {
		t.Fatalf("update of a missing key: %v, want not found", err)
	}
	if called {
		t.Error("update function called for a missing key without ignoreNotFound")
	}
	// With ignoreNotFound the update function gets a zero object and creates it.
	out := &corev1.ConfigMap{}
	err = s.GuaranteedUpdate(ctx, cmKey("ns", "a"), out, true, nil, func(cur runtime.Object) (runtime.Object, error) {
		diff(t, "object handed to the update of a missing key", &corev1.ConfigMap{}, cur)
		return newCM("ns", "a", "new", nil), nil
	})
	if err != nil {
		t.Fatalf("update with ignoreNotFound: %v", err)
	}
	if out.Data["v"] != "new" || rvOf(t, out) != currentRev(t, b) {
		t.Errorf("created by update: %+v", out)
	}
}

func testUpdatePreconditions(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	ctx := context.Background()
	c := create(t, s, newCM("ns", "a", "1", nil))
	rev := currentRev(t, b)
	good, stale := c.ResourceVersion, rvString(rvOf(t, c)-1)
	goodUID, badUID := c.UID, types.UID("other")
	for _, tc := range []struct {
		name string
		pre  storage.Preconditions
		code storage.ErrorCode
	}{
		{"stale resourceVersion", storage.Preconditions{ResourceVersion: &stale}, storage.ErrCodeResourceVersionConflicts},
		{"other uid", storage.Preconditions{UID: &badUID}, storage.ErrCodeInvalidObj},
		{"good uid stale resourceVersion", storage.Preconditions{UID: &goodUID, ResourceVersion: &stale}, storage.ErrCodeResourceVersionConflicts},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := s.GuaranteedUpdate(ctx, cmKey("ns", "a"), &corev1.ConfigMap{}, false, &tc.pre, func(cur runtime.Object) (runtime.Object, error) {
				cm := cur.(*corev1.ConfigMap)
				cm.Data["v"] = "bad"
				return cm, nil
			})
			wantCode(t, err, tc.code, "update with failing preconditions")
		})
	}
	if cur := currentRev(t, b); cur != rev {
		t.Fatalf("failed preconditions moved the revision from %d to %d", rev, cur)
	}
	out := &corev1.ConfigMap{}
	err := s.GuaranteedUpdate(ctx, cmKey("ns", "a"), out, false, &storage.Preconditions{UID: &goodUID, ResourceVersion: &good}, func(cur runtime.Object) (runtime.Object, error) {
		cm := cur.(*corev1.ConfigMap)
		cm.Data["v"] = "2"
		return cm, nil
	})
	if err != nil || out.Data["v"] != "2" {
		t.Fatalf("update with holding preconditions: %v, %v", err, out.Data)
	}
}

func testUpdateFuncError(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	c := create(t, s, newCM("ns", "a", "1", nil))
	errVeto := errors.New("veto")
	err := s.GuaranteedUpdate(context.Background(), cmKey("ns", "a"), &corev1.ConfigMap{}, false, nil, func(cur runtime.Object) (runtime.Object, error) {
		cur.(*corev1.ConfigMap).Data["v"] = "changed but vetoed"
		return nil, errVeto
	})
	if !errors.Is(err, errVeto) {
		t.Fatalf("GuaranteedUpdate returned %v, want the update function's error", err)
	}
	got := &corev1.ConfigMap{}
	if err := s.Get(context.Background(), cmKey("ns", "a"), storage.GetOptions{}, got); err != nil {
		t.Fatal(err)
	}
	diff(t, "object after a vetoed update", c, got)
}

func testUpdateRetries(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	ctx := context.Background()
	create(t, s, newCM("ns", "a", "1", nil))
	calls := 0
	out := &corev1.ConfigMap{}
	err := s.GuaranteedUpdate(ctx, cmKey("ns", "a"), out, false, nil, func(cur runtime.Object) (runtime.Object, error) {
		calls++
		cm := cur.(*corev1.ConfigMap)
		if calls == 1 {
			// Another client writes between our read and our write.
			update(t, s, "ns", "a", "other")
		}
		cm.Data["mine"] = "yes"
		return cm, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Errorf("update function called %d times, want 2 (one retry after the conflict)", calls)
	}
	if out.Data["v"] != "other" || out.Data["mine"] != "yes" {
		t.Errorf("result %v lost a write", out.Data)
	}
}

func testDelete(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	ctx := context.Background()
	c := create(t, s, newCM("ns", "a", "1", nil))
	u := update(t, s, "ns", "a", "2")
	out := del(t, s, "ns", "a")
	rev := currentRev(t, b)
	if rev <= rvOf(t, u) {
		t.Errorf("delete did not move the revision past %s", u.ResourceVersion)
	}
	if out.Data["v"] != "2" || out.UID != c.UID {
		t.Errorf("Delete returned %+v, want the last state", out)
	}
	if got := rvOf(t, out); got != rev {
		t.Errorf("deleted object's resourceVersion %d, want the delete's revision %d", got, rev)
	}
	err := s.Get(ctx, cmKey("ns", "a"), storage.GetOptions{}, &corev1.ConfigMap{})
	if !storage.IsNotFound(err) {
		t.Errorf("Get after delete: %v", err)
	}
	err = s.Delete(ctx, cmKey("ns", "a"), &corev1.ConfigMap{}, nil, nil)
	if !storage.IsNotFound(err) {
		t.Errorf("second Delete: %v, want not found", err)
	}
	if cur := currentRev(t, b); cur != rev {
		t.Errorf("a failed delete moved the revision from %d to %d", rev, cur)
	}
}

func testDeletePreconditions(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	ctx := context.Background()
	c := create(t, s, newCM("ns", "a", "1", nil))
	stale := rvString(rvOf(t, c) - 1)
	bad := types.UID("other")
	err := s.Delete(ctx, cmKey("ns", "a"), &corev1.ConfigMap{}, &storage.Preconditions{ResourceVersion: &stale}, nil)
	wantCode(t, err, storage.ErrCodeResourceVersionConflicts, "Delete with a stale resourceVersion")
	err = s.Delete(ctx, cmKey("ns", "a"), &corev1.ConfigMap{}, &storage.Preconditions{UID: &bad}, nil)
	wantCode(t, err, storage.ErrCodeInvalidObj, "Delete with another uid")
	if err := s.Get(ctx, cmKey("ns", "a"), storage.GetOptions{}, &corev1.ConfigMap{}); err != nil {
		t.Fatalf("object gone after failed deletes: %v", err)
	}
	good, uid := c.ResourceVersion, c.UID
	if err := s.Delete(ctx, cmKey("ns", "a"), &corev1.ConfigMap{}, &storage.Preconditions{ResourceVersion: &good, UID: &uid}, nil); err != nil {
		t.Fatalf("Delete with holding preconditions: %v", err)
	}
}

func testDeleteValidate(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	ctx := context.Background()
	c := create(t, s, newCM("ns", "a", "1", nil))
	errVeto := errors.New("veto")
	var seen *corev1.ConfigMap
	err := s.Delete(ctx, cmKey("ns", "a"), &corev1.ConfigMap{}, nil, func(_ context.Context, cur runtime.Object) error {
		seen = cur.(*corev1.ConfigMap).DeepCopy()
		return errVeto
	})
	if !errors.Is(err, errVeto) {
		t.Fatalf("Delete returned %v, want the validate error", err)
	}
	diff(t, "object seen by validate", c, seen)
	got := &corev1.ConfigMap{}
	if err := s.Get(ctx, cmKey("ns", "a"), storage.GetOptions{}, got); err != nil {
		t.Fatalf("object gone after a vetoed delete: %v", err)
	}
	diff(t, "object after a vetoed delete", c, got)
}

func testDeleteRetries(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	ctx := context.Background()
	create(t, s, newCM("ns", "a", "1", nil))
	var seen []string
	out := &corev1.ConfigMap{}
	err := s.Delete(ctx, cmKey("ns", "a"), out, nil, func(_ context.Context, cur runtime.Object) error {
		cm := cur.(*corev1.ConfigMap)
		seen = append(seen, cm.Data["v"])
		if len(seen) == 1 {
			update(t, s, "ns", "a", "2")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "states validate saw", []string{"1", "2"}, seen)
	if out.Data["v"] != "2" {
		t.Errorf("Delete returned %v, want the state after the concurrent update", out.Data)
	}
}

func testRecreate(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	c1 := create(t, s, newCM("ns", "a", "1", nil))
	del(t, s, "ns", "a")
	c2 := create(t, s, newCM("ns", "a", "2", nil))
	if rvOf(t, c2) <= rvOf(t, c1) || c2.Data["v"] != "2" {
		t.Errorf("recreated object %+v", c2)
	}
}
