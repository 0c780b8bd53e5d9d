package memory_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kplane/kplane/pkg/storage"
	"github.com/kplane/kplane/pkg/storage/memory"
)

// TestRandomHistory checks multi-version reads against a model: random
// creates, updates, deletes and compactions, with every readable revision's
// snapshot compared to the model's and every compacted one refused.
func TestRandomHistory(t *testing.T) {
	const history = 20
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	b := newBackend(t, memory.Config{HistoryRevisions: history})
	s := configMaps(t, b)
	ctx := context.Background()

	// snapshots[rev] is the model state at rev: name -> value.
	snapshots := map[uint64]map[string]string{1: {}}
	cur := uint64(1)
	state := map[string]string{}
	compactedTo := uint64(1)
	steps := 600
	if testing.Short() {
		steps = 200
	}
	for step := range steps {
		name := fmt.Sprint("k", rng.IntN(6))
		key := "/configmaps/ns/" + name
		v := fmt.Sprint(step)
		_, exists := state[name]
		var err error
		wrote := true
		switch op := rng.IntN(10); {
		case op < 3:
			err = s.Create(ctx, key, cm(name, v), &corev1.ConfigMap{})
			if exists {
				wrote = false
				if !storage.IsExists(err) {
					t.Fatalf("step %d: create of existing %s: %v", step, name, err)
				}
				err = nil
			}
		case op < 6:
			err = s.GuaranteedUpdate(ctx, key, &corev1.ConfigMap{}, false, nil, func(c runtime.Object) (runtime.Object, error) {
				c.(*corev1.ConfigMap).Data = map[string]string{"v": v}
				return c, nil
			})
			if !exists {
				wrote = false
				if !storage.IsNotFound(err) {
					t.Fatalf("step %d: update of missing %s: %v", step, name, err)
				}
				err = nil
			}
		case op < 8:
			err = s.Delete(ctx, key, &corev1.ConfigMap{}, nil, nil)
			if !exists {
				wrote = false
				if !storage.IsNotFound(err) {
					t.Fatalf("step %d: delete of missing %s: %v", step, name, err)
				}
				err = nil
			}
			v = ""
		case op < 9:
			wrote = false
			if back := uint64(rng.IntN(history)); cur > back {
				target := max(cur-back, compactedTo)
				if err := b.Compact(ctx, target); err != nil {
					t.Fatalf("step %d: Compact(%d): %v", step, target, err)
				}
				compactedTo = target
			}
		default:
			wrote = false
		}
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if wrote {
			cur++
			next := make(map[string]string, len(state)+1)
			for k, val := range state {
				next[k] = val
			}
			if v == "" {
				delete(next, name)
			} else {
				next[name] = v
			}
			state = next
			snapshots[cur] = state
		}
		if got := mustRev(t, b); got != cur {
			t.Fatalf("step %d: revision %d, model %d", step, got, cur)
		}
		oldest := max(compactedTo, 1)
		if cur > history {
			oldest = max(oldest, cur-history)
		}
		// Check a few revisions around the oldest readable one and the newest.
		for _, rev := range []uint64{oldest - 1, oldest, oldest + uint64(rng.IntN(int(cur-oldest)+1)), cur} {
			if rev == 0 || rev > cur {
				continue
			}
			l := &corev1.ConfigMapList{}
			err := s.GetList(ctx, "/configmaps/ns", storage.ListOptions{Recursive: true, ResourceVersion: fmt.Sprint(rev), ResourceVersionMatch: metav1.ResourceVersionMatchExact}, l)
			if rev < oldest {
				if !storage.IsExpired(err) {
					t.Fatalf("step %d: list at %d, older than %d: %v, want expired", step, rev, oldest, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("step %d: list at %d (oldest %d): %v", step, rev, oldest, err)
			}
			var got, want []string
			for _, c := range l.Items {
				got = append(got, c.Name+"="+c.Data["v"])
			}
			for k, val := range snapshots[rev] {
				want = append(want, k+"="+val)
			}
			sort.Strings(want)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("step %d: snapshot at %d is %v, model %v", step, rev, got, want)
			}
		}
	}
}

func mustRev(t testing.TB, b *memory.Backend) uint64 {
	t.Helper()
	rev, err := b.CurrentRevision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

// FuzzKeys checks that any key is either refused, leaving nothing behind,
// or stored under exactly that key and listed under its parent only.
func FuzzKeys(f *testing.F) {
	for _, k := range []string{"/configmaps/ns/a", "/configmaps/ns/../x", "configmaps", "/configmaps//a", "/configmaps/ns/a/", "/"} {
		f.Add(k)
	}
	b, err := memory.New(memory.Config{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = b.Close() })
	s := configMaps(f, b)
	f.Fuzz(func(t *testing.T, key string) {
		ctx := context.Background()
		before := mustRev(t, b)
		err := s.Create(ctx, key, cm("x", "1"), &corev1.ConfigMap{})
		if storage.ValidateKey(key) != nil {
			if err == nil {
				t.Fatalf("Create accepted the invalid key %q", key)
			}
			if after := mustRev(t, b); after != before {
				t.Fatalf("a refused create moved the revision %d -> %d", before, after)
			}
			return
		}
		if err != nil && !storage.IsExists(err) {
			t.Fatalf("Create(%q): %v", key, err)
		}
		if err := s.Get(ctx, key, storage.GetOptions{}, &corev1.ConfigMap{}); err != nil {
			t.Fatalf("Get(%q) after create: %v", key, err)
		}
		// A list of the key itself as a prefix never includes the key.
		l := &corev1.ConfigMapList{}
		if err := s.GetList(ctx, key, storage.ListOptions{Recursive: true}, l); err != nil {
			t.Fatalf("GetList(%q): %v", key, err)
		}
		if len(l.Items) != 0 {
			t.Fatalf("list below %q includes %d objects, want none", key, len(l.Items))
		}
		if err := s.Delete(ctx, key, &corev1.ConfigMap{}, nil, nil); err != nil {
			t.Fatalf("Delete(%q): %v", key, err)
		}
	})
}
