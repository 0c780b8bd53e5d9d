package memory_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kplane/kplane/pkg/storage"
	"github.com/kplane/kplane/pkg/storage/memory"
)

// TestDecodedCacheChangesNothing runs one random sequence of operations on
// a backend with the decoded cache and on one without, and requires every
// result to be the same. Update functions and callers change the objects
// they get in place, as they may, so a leaked shared object would show.
func TestDecodedCacheChangesNothing(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	ctx := context.Background()
	const history = 30
	backends := []*memory.Backend{
		newBackend(t, memory.Config{HistoryRevisions: history}),
		newBackend(t, memory.Config{HistoryRevisions: history, DisableDecodedCache: true}),
	}
	stores := []storage.Interface{configMaps(t, backends[0]), configMaps(t, backends[1])}
	// Each backend's changes are watched, and the events compared after every step.
	var watchers []storage.Watcher
	for _, s := range stores {
		w, err := s.Watch(ctx, "/configmaps/ns", storage.ListOptions{Recursive: true, ResourceVersion: "1", Predicate: storage.Predicate{}})
		if err != nil {
			t.Fatal(err)
		}
		watchers = append(watchers, w)
		defer w.Stop()
	}
	seen := []uint64{1, 1} // the revision of each watch's last event
	type event struct {
		Type       string
		Object     runtime.Object
		PrevObject runtime.Object
		Raw        string
	}
	events := func(i int) []event {
		cur, err := backends[i].CurrentRevision(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []event
		for seen[i] < cur {
			e, ok := next(t, watchers[i])
			if !ok {
				t.Fatalf("watch %d closed at %d", i, seen[i])
			}
			rv, err := storage.ObjectResourceVersion(e.Object)
			if err != nil {
				t.Fatalf("watch %d: %v", i, err)
			}
			seen[i] = rv
			out = append(out, event{string(e.Type), e.Object, e.PrevObject, string(e.Raw)})
		}
		return out
	}
	type result struct {
		Obj  runtime.Object
		Code int // storage error code, 0 without error
	}
	code := func(err error) int {
		if err == nil {
			return 0
		}
		if se, ok := err.(*storage.Error); ok {
			return int(se.Code)
		}
		t.Fatalf("unexpected error %v", err)
		return -1
	}
	steps := 3000
	if testing.Short() {
		steps = 800
	}
	var rev uint64 = 1
	for step := range steps {
		name := fmt.Sprint("k", rng.IntN(8))
		key := "/configmaps/ns/" + name
		v := strconv.Itoa(rng.IntN(4))
		op := rng.IntN(12)
		listRV := strconv.FormatUint(rev-uint64(rng.IntN(history+5)), 10)
		limit := int64(rng.IntN(4))
		sel := labels.SelectorFromSet(labels.Set{"v": strconv.Itoa(rng.IntN(4))})
		var results [2]result
		for i, s := range stores {
			var r result
			switch {
			case op < 2:
				out := &corev1.ConfigMap{}
				obj := cm(name, v)
				obj.Labels = map[string]string{"v": v}
				r.Code = code(s.Create(ctx, key, obj, out))
				r.Obj = out.DeepCopy()
				scribble(out)
			case op < 5:
				out := &corev1.ConfigMap{}
				r.Code = code(s.GuaranteedUpdate(ctx, key, out, op == 4, nil, func(cur runtime.Object) (runtime.Object, error) {
					c := cur.(*corev1.ConfigMap)
					if c.Data == nil {
						c.Data = map[string]string{}
					}
					if c.Labels == nil {
						c.Labels = map[string]string{}
					}
					c.Name, c.Namespace = name, "ns"
					c.Data["v"] = v // often the same: a no-op update
					c.Labels["v"] = v
					return c, nil
				}))
				r.Obj = out.DeepCopy()
				scribble(out)
			case op < 6:
				out := &corev1.ConfigMap{}
				r.Code = code(s.Delete(ctx, key, out, nil, func(_ context.Context, cur runtime.Object) error {
					scribble(cur.(*corev1.ConfigMap))
					return nil
				}))
				r.Obj = out.DeepCopy()
			case op < 8:
				out := &corev1.ConfigMap{}
				r.Code = code(s.Get(ctx, key, storage.GetOptions{}, out))
				r.Obj = out.DeepCopy()
				scribble(out)
			default:
				opts := storage.ListOptions{Recursive: true, Predicate: storage.Predicate{Limit: limit}}
				switch op {
				case 9:
					opts.ResourceVersion, opts.ResourceVersionMatch = listRV, metav1.ResourceVersionMatchExact
				case 10:
					opts.Predicate.Label = sel
				case 11:
					opts.ResourceVersion = listRV
				}
				all := &corev1.ConfigMapList{}
				for page := 0; ; page++ {
					l := &corev1.ConfigMapList{}
					err := s.GetList(ctx, "/configmaps/ns", opts, l)
					if r.Code = code(err); err != nil {
						break
					}
					all.Items = append(all.Items, l.Items...)
					all.ResourceVersion = l.ResourceVersion
					for j := range l.Items {
						scribble(&l.Items[j])
					}
					if l.Continue == "" || page > 10 {
						break
					}
					opts.Predicate.Continue, opts.ResourceVersion, opts.ResourceVersionMatch = l.Continue, "", ""
				}
				r.Obj = all.DeepCopy()
			}
			results[i] = r
		}
		if diff := cmp.Diff(results[0], results[1]); diff != "" {
			t.Fatalf("step %d (op %d on %s): with the cache (-) and without (+):\n%s", step, op, name, diff)
		}
		if diff := cmp.Diff(events(0), events(1)); diff != "" {
			t.Fatalf("step %d (op %d on %s): watch events with the cache (-) and without (+):\n%s", step, op, name, diff)
		}
		if results[0].Code == 0 && op < 6 {
			if rv, err := storage.ObjectResourceVersion(results[0].Obj); err == nil && rv > rev {
				rev = rv
			}
		}
	}
}
