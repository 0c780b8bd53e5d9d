package cache_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/kplane/kplane/pkg/cache"
)

func byNode(p *corev1.Pod) ([]string, error) {
	if p.Spec.NodeName == "" {
		return nil, nil
	}
	return []string{p.Spec.NodeName}, nil
}

func byLabels(p *corev1.Pod) ([]string, error) {
	var out []string
	for k, v := range p.Labels {
		out = append(out, k+"="+v)
	}
	return out, nil
}

func newIndexer(t testing.TB) *cache.Indexer[*corev1.Pod] {
	t.Helper()
	x, err := cache.NewIndexer(cache.IndexerConfig[*corev1.Pod]{Indexers: cache.Indexers[*corev1.Pod]{
		"node": byNode, "labels": byLabels,
	}})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func onNode(p *corev1.Pod, node string) *corev1.Pod { p.Spec.NodeName = node; return p }

func TestIndexer(t *testing.T) {
	x := newIndexer(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(x.Add(onNode(pod("a", "p1", "1", "app", "web"), "n1")))
	must(x.Add(onNode(pod("a", "p2", "1", "app", "db"), "n2")))
	must(x.Add(onNode(pod("b", "p1", "1", "app", "web", "tier", "front"), "n1")))
	must(x.Add(pod("", "cluster", "1")))

	tests := []struct {
		name string
		got  any
		want any
	}{
		{"keys: namespace then name", x.ListKeys(), []string{"cluster", "a/p1", "a/p2", "b/p1"}},
		{"len", x.Len(), 4},
		{"ns a", must2(x.IndexKeys(cache.NamespaceIndex, "a")), []string{"a/p1", "a/p2"}},
		{"ns b objects", names(must2(x.ByIndex(cache.NamespaceIndex, "b"))), []string{"b/p1"}},
		{"cluster-scoped ns", must2(x.IndexKeys(cache.NamespaceIndex, "")), []string{"cluster"}},
		{"node n1", must2(x.IndexKeys("node", "n1")), []string{"a/p1", "b/p1"}},
		{"node values", x.ListIndexFuncValues("node"), []string{"n1", "n2"}},
		{"namespace values", x.ListIndexFuncValues(cache.NamespaceIndex), []string{"", "a", "b"}},
		{"label values", x.ListIndexFuncValues("labels"), []string{"app=db", "app=web", "tier=front"}},
		{"unknown index values", x.ListIndexFuncValues("nope"), []string(nil)},
		{"Index shares a value", names(must2(x.Index("labels", pod("z", "z", "", "app", "web", "tier", "front")))), []string{"a/p1", "b/p1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, tt.got); d != "" {
				t.Errorf("-want +got:\n%s", d)
			}
		})
	}

	// Update moves index entries.
	must(x.Update(onNode(pod("a", "p1", "2", "app", "db"), "n3")))
	if got := must2(x.IndexKeys("node", "n1")); !cmp.Equal(got, []string{"b/p1"}) {
		t.Errorf("after update node n1 = %v", got)
	}
	if got := must2(x.IndexKeys("labels", "app=db")); !cmp.Equal(got, []string{"a/p1", "a/p2"}) {
		t.Errorf("after update app=db = %v", got)
	}
	// Delete removes them.
	must(x.Delete(pod("a", "p2", "")))
	if got := x.ListIndexFuncValues("node"); !cmp.Equal(got, []string{"n1", "n3"}) {
		t.Errorf("after delete node values = %v", got)
	}
	if _, ok := x.GetByKey("a/p2"); ok {
		t.Error("a/p2 still present")
	}
	if _, err := x.ByIndex("nope", "x"); err == nil {
		t.Error("ByIndex on an unknown index: no error")
	}
	// Replace swaps everything.
	must(x.Replace([]*corev1.Pod{onNode(pod("c", "q", "5"), "n9")}))
	if d := cmp.Diff([]string{"c/q"}, x.ListKeys()); d != "" {
		t.Error(d)
	}
	if got := x.ListIndexFuncValues("node"); !cmp.Equal(got, []string{"n9"}) {
		t.Errorf("after replace node values = %v", got)
	}
}

func must2[V any](v V, err error) V {
	if err != nil {
		panic(err)
	}
	return v
}

func TestIndexerBadInputChangesNothing(t *testing.T) {
	fail := errors.New("boom")
	x, err := cache.NewIndexer(cache.IndexerConfig[*corev1.Pod]{Indexers: cache.Indexers[*corev1.Pod]{
		"picky": func(p *corev1.Pod) ([]string, error) {
			if p.Labels["bad"] != "" {
				return nil, fail
			}
			return []string{p.Name}, nil
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Add(pod("a", "ok", "1")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		op   func() error
	}{
		{"add without name", func() error { return x.Add(pod("a", "", "1")) }},
		{"add nil", func() error { return x.Add(nil) }},
		{"failing index", func() error { return x.Update(pod("a", "ok", "2", "bad", "y")) }},
		{"replace with a failing index", func() error {
			return x.Replace([]*corev1.Pod{pod("a", "new", "1"), pod("a", "x", "1", "bad", "y")})
		}},
		{"replace with nil", func() error { return x.Replace([]*corev1.Pod{nil}) }},
		{"redefine namespace index", func() error {
			return x.AddIndexers(cache.Indexers[*corev1.Pod]{cache.NamespaceIndex: cache.NamespaceIndexFunc[*corev1.Pod]})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.op(); err == nil {
				t.Fatal("no error")
			}
			if d := cmp.Diff([]string{"a/ok"}, x.ListKeys()); d != "" {
				t.Errorf("store changed: %s", d)
			}
			got, _ := x.GetByKey("a/ok")
			if got.ResourceVersion != "1" {
				t.Errorf("object changed to rv %s", got.ResourceVersion)
			}
			if d := cmp.Diff([]string{"ok"}, x.ListIndexFuncValues("picky")); d != "" {
				t.Errorf("index changed: %s", d)
			}
		})
	}
}

func TestIndexerAddIndexersIndexesExistingContent(t *testing.T) {
	x := newIndexer(t)
	for i := range 5 {
		if err := x.Add(pod("ns", fmt.Sprint("p", i), "1", "parity", fmt.Sprint(i%2))); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.AddIndexers(cache.Indexers[*corev1.Pod]{"parity": func(p *corev1.Pod) ([]string, error) {
		return []string{p.Labels["parity"]}, nil
	}}); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"ns/p1", "ns/p3"}, must2(x.IndexKeys("parity", "1"))); d != "" {
		t.Error(d)
	}
}

// TestIndexerSnapshotsAreConsistent checks, under concurrent writes, that
// every read sees one consistent state: the writer always moves a pair of
// objects together (both on the same "generation" label), so a List or an
// index read that mixes generations would be torn.
func TestIndexerSnapshotsAreConsistent(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	x := newIndexer(t)
	gen := func(g int) []*corev1.Pod {
		return []*corev1.Pod{pod("ns", "a", fmt.Sprint(g), "gen", fmt.Sprint(g)), pod("ns", "b", fmt.Sprint(g), "gen", fmt.Sprint(g))}
	}
	if err := x.Replace(gen(0)); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var torn atomic.Int64
	for range 4 {
		wg.Go(func() {
			for !stop.Load() {
				l := x.List()
				if len(l) != 2 || l[0].ResourceVersion != l[1].ResourceVersion {
					torn.Add(1)
				}
				if vals := x.ListIndexFuncValues("labels"); len(vals) != 1 {
					torn.Add(1)
				}
			}
		})
	}
	for g := 1; g < 2000; g++ {
		pair := gen(g)
		rng.Shuffle(len(pair), func(i, j int) { pair[i], pair[j] = pair[j], pair[i] })
		if err := x.Replace(pair); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if n := torn.Load(); n > 0 {
		t.Fatalf("%d torn reads", n)
	}
}

func TestIndexerConcurrentReadersAndWriters(t *testing.T) {
	x := newIndexer(t)
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for i := range 500 {
				p := onNode(pod("ns", fmt.Sprint("w", w, "-", i%50), fmt.Sprint(i)), fmt.Sprint("n", i%3))
				if i%7 == 0 {
					_ = x.Delete(p)
				} else if err := x.Update(p); err != nil {
					t.Error(err)
				}
			}
		})
	}
	for range 4 {
		wg.Go(func() {
			for range 200 {
				_ = x.List()
				_, _ = x.ByIndex("node", "n1")
				_, _ = x.GetByKey("ns/w0-1")
			}
		})
	}
	wg.Wait()
	// The index agrees with the items.
	for _, n := range x.ListIndexFuncValues("node") {
		for _, p := range must2(x.ByIndex("node", n)) {
			if p.Spec.NodeName != n {
				t.Errorf("%s indexed under %s but is on %s", p.Name, n, p.Spec.NodeName)
			}
		}
	}
	total := 0
	for _, n := range x.ListIndexFuncValues("node") {
		total += len(must2(x.IndexKeys("node", n)))
	}
	if total != x.Len() {
		t.Errorf("node index holds %d keys, store %d", total, x.Len())
	}
}

func TestIndexerReplaceDuplicateKeysLastWins(t *testing.T) {
	for _, n := range []int{3, 500} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			x := newIndexer(t)
			var list []*corev1.Pod
			for i := range n {
				list = append(list, onNode(pod("ns", fmt.Sprint("p", i), "1"), "n1"))
			}
			list = append(list, onNode(pod("ns", "p1", "2"), "n2"))
			if err := x.Replace(list); err != nil {
				t.Fatal(err)
			}
			if x.Len() != n {
				t.Errorf("Len = %d, want %d", x.Len(), n)
			}
			if p, _ := x.GetByKey("ns/p1"); p.ResourceVersion != "2" {
				t.Errorf("p1 at rv %s, want the last one", p.ResourceVersion)
			}
			if got := must2(x.IndexKeys("node", "n2")); !cmp.Equal(got, []string{"ns/p1"}) {
				t.Errorf("node n2 = %v", got)
			}
			if got := len(must2(x.IndexKeys("node", "n1"))); got != n-1 {
				t.Errorf("node n1 has %d keys, want %d", got, n-1)
			}
		})
	}
}

func TestIndexerIndexesFollowUpdates(t *testing.T) {
	x := newIndexer(t)
	if err := x.Add(onNode(pod("ns", "a", "1"), "n1")); err != nil {
		t.Fatal(err)
	}
	// Same index value, new object: ByIndex must return the new one.
	if err := x.Update(onNode(pod("ns", "a", "2"), "n1")); err != nil {
		t.Fatal(err)
	}
	got := must2(x.ByIndex("node", "n1"))
	if len(got) != 1 || got[0].ResourceVersion != "2" {
		t.Fatalf("ByIndex after update = %v", got)
	}
	got = must2(x.ByIndex(cache.NamespaceIndex, "ns"))
	if len(got) != 1 || got[0].ResourceVersion != "2" {
		t.Fatalf("namespace ByIndex after update = %v", got)
	}
}

func TestIndexerMalformedKeysFindNothing(t *testing.T) {
	x := newIndexer(t)
	_ = x.Add(pod("a", "b", "1"))
	_ = x.Add(pod("", "c", "1"))
	for _, k := range []string{"", "/", "a/", "/b", "a/b/c", "b", "a/c"} {
		if p, ok := x.GetByKey(k); ok {
			t.Errorf("GetByKey(%q) = %v", k, p.Name)
		}
	}
	for _, k := range []string{"a/b", "c"} {
		if _, ok := x.GetByKey(k); !ok {
			t.Errorf("GetByKey(%q) found nothing", k)
		}
	}
}

func TestIndexerBatchIsPublishedAtOnce(t *testing.T) {
	x := newIndexer(t)
	_ = x.Add(pod("ns", "a", "1"))
	x.Batch(func(w *cache.IndexerWriter[*corev1.Pod]) {
		if err := w.Put(pod("ns", "b", "1")); err != nil {
			t.Fatal(err)
		}
		if _, ok := w.GetByKey("ns/b"); !ok {
			t.Error("the batch does not see its own write")
		}
		w.DeleteKey("ns/a")
		// Readers still see the state before the batch.
		if d := cmp.Diff([]string{"ns/a"}, x.ListKeys()); d != "" {
			t.Errorf("readers see a batch in progress: %s", d)
		}
		if err := w.Put(pod("ns", "", "1")); err == nil {
			t.Error("Put without a name: no error")
		}
	})
	if d := cmp.Diff([]string{"ns/b"}, x.ListKeys()); d != "" {
		t.Errorf("after the batch: %s", d)
	}
}
