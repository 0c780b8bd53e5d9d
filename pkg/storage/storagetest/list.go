package storagetest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kplane/kplane/pkg/storage"
)

var listTests = []test{
	{name: "ListPrefix", run: testListPrefix},
	{name: "ListSingleKey", run: testListSingleKey},
	{name: "ListSelectors", run: testListSelectors},
	{name: "ListResourceVersion", run: testListResourceVersion},
	{name: "ListExactSnapshot", run: testListExact},
	{name: "ListPagination", run: testListPagination},
	{name: "ListPaginationFiltered", run: testListPaginationFiltered},
	{name: "ListPaginationPinned", run: testListPaginationPinned},
	{name: "ListBadContinue", run: testListBadContinue},
	{name: "Compaction", run: testCompaction},
}

func testListPrefix(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	for _, k := range [][2]string{{"ns", "b"}, {"ns", "a"}, {"ns2", "a"}, {"n", "a"}, {"ns", "c"}} {
		create(t, s, newCM(k[0], k[1], "1", nil))
	}
	rev := currentRev(t, b)
	for _, tc := range []struct {
		key  string
		want []string
	}{
		{"/configmaps/ns", []string{"ns/a=1", "ns/b=1", "ns/c=1"}},
		{"/configmaps/ns/", []string{"ns/a=1", "ns/b=1", "ns/c=1"}},
		{"/configmaps/ns2", []string{"ns2/a=1"}},
		{"/configmaps/n", []string{"n/a=1"}},
		{"/configmaps", []string{"n/a=1", "ns/a=1", "ns/b=1", "ns/c=1", "ns2/a=1"}},
		{"/configmaps/none", []string{}},
	} {
		t.Run(tc.key, func(t *testing.T) {
			l := list(t, s, tc.key, storage.ListOptions{})
			diff(t, "listed objects", tc.want, names(l.Items))
			if l.ResourceVersion != rvString(rev) {
				t.Errorf("list resourceVersion %q, want the current revision %d", l.ResourceVersion, rev)
			}
			if l.Continue != "" {
				t.Errorf("unpaged list has continue %q", l.Continue)
			}
			if l.Items == nil {
				t.Error("list Items is nil, want empty")
			}
		})
	}
	// Each item carries its own revision.
	l := list(t, s, "/configmaps/ns", storage.ListOptions{})
	for _, cm := range l.Items {
		rvOf(t, &cm)
	}
}

func testListSingleKey(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	create(t, s, newCM("ns", "a", "1", nil))
	create(t, s, newCM("ns", "a1", "1", nil))
	l := &corev1.ConfigMapList{}
	if err := s.GetList(context.Background(), cmKey("ns", "a"), storage.ListOptions{}, l); err != nil {
		t.Fatal(err)
	}
	diff(t, "non-recursive list", []string{"ns/a=1"}, names(l.Items))
	if err := s.GetList(context.Background(), cmKey("ns", "zz"), storage.ListOptions{}, l); err != nil {
		t.Fatal(err)
	}
	diff(t, "non-recursive list of a missing key", []string{}, names(l.Items))
}

func testListSelectors(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	create(t, s, newCM("ns", "a", "1", map[string]string{"app": "web", "tier": "front"}))
	create(t, s, newCM("ns", "b", "1", map[string]string{"app": "web"}))
	create(t, s, newCM("ns", "c", "1", map[string]string{"app": "db"}))
	create(t, s, newCM("ns2", "a", "1", map[string]string{"app": "web"}))
	ps := pods(t, b)
	for _, p := range []*corev1.Pod{newPod("ns", "p1", "node1", nil), newPod("ns", "p2", "node2", nil), newPod("ns", "p3", "node1", nil)} {
		if err := ps.Create(context.Background(), podKey(p.Namespace, p.Name), p, &corev1.Pod{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name  string
		label string
		field string
		want  []string
	}{
		{"label equality", "app=web", "", []string{"ns/a=1", "ns/b=1", "ns2/a=1"}},
		{"label set", "app in (db),tier!=front", "", []string{"ns/c=1"}},
		{"label exists", "tier", "", []string{"ns/a=1"}},
		{"field name", "", "metadata.name=a", []string{"ns/a=1", "ns2/a=1"}},
		{"field namespace and label", "app=web", "metadata.namespace=ns", []string{"ns/a=1", "ns/b=1"}},
		{"nothing", "app=none", "", []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pred := storage.Predicate{}
			var err error
			if tc.label != "" {
				if pred.Label, err = labels.Parse(tc.label); err != nil {
					t.Fatal(err)
				}
			}
			if tc.field != "" {
				if pred.Field, err = fields.ParseSelector(tc.field); err != nil {
					t.Fatal(err)
				}
			}
			l := list(t, s, "/configmaps", storage.ListOptions{Predicate: pred})
			diff(t, "selected objects", tc.want, names(l.Items))
		})
	}
	t.Run("pod field with attrs", func(t *testing.T) {
		pl := &corev1.PodList{}
		pred := storage.Predicate{Field: fields.OneTermEqualSelector("spec.nodeName", "node1"), GetAttrs: podAttrs}
		if err := ps.GetList(context.Background(), "/pods", storage.ListOptions{Recursive: true, Predicate: pred}, pl); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range pl.Items {
			got = append(got, p.Name)
		}
		diff(t, "pods on node1", []string{"p1", "p3"}, got)
	})
}

func testListResourceVersion(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	c := create(t, s, newCM("ns", "a", "1", nil))
	rv := rvOf(t, c)
	update(t, s, "ns", "a", "2")
	cur := currentRev(t, b)
	for _, tc := range []struct {
		name  string
		rv    string
		match metav1.ResourceVersionMatch
		code  storage.ErrorCode
		want  []string
		rev   uint64
	}{
		{name: "consistent", rv: "", want: []string{"ns/a=2"}, rev: cur},
		{name: "any", rv: "0", want: []string{"ns/a=2"}, rev: cur},
		{name: "not older than old", rv: rvString(rv), match: metav1.ResourceVersionMatchNotOlderThan, want: []string{"ns/a=2"}, rev: cur},
		{name: "legacy at least", rv: rvString(rv), want: []string{"ns/a=2"}, rev: cur},
		{name: "not older than future", rv: rvString(cur + 10), match: metav1.ResourceVersionMatchNotOlderThan, code: storage.ErrCodeTooLargeResourceVersion},
		{name: "exact future", rv: rvString(cur + 10), match: metav1.ResourceVersionMatchExact, code: storage.ErrCodeTooLargeResourceVersion},
		{name: "exact old", rv: rvString(rv), match: metav1.ResourceVersionMatchExact, want: []string{"ns/a=1"}, rev: rv},
		{name: "exact current", rv: rvString(cur), match: metav1.ResourceVersionMatchExact, want: []string{"ns/a=2"}, rev: cur},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &corev1.ConfigMapList{}
			err := s.GetList(context.Background(), "/configmaps", storage.ListOptions{Recursive: true, ResourceVersion: tc.rv, ResourceVersionMatch: tc.match}, l)
			if tc.code != 0 {
				wantCode(t, err, tc.code, "GetList")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			diff(t, "listed objects", tc.want, names(l.Items))
			if l.ResourceVersion != rvString(tc.rev) {
				t.Errorf("list resourceVersion %s, want %d", l.ResourceVersion, tc.rev)
			}
		})
	}
	for _, bad := range []storage.ListOptions{
		{ResourceVersion: "x"},
		{ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchExact},
		{ResourceVersion: "1", ResourceVersionMatch: "Sometimes"},
	} {
		bad.Recursive = true
		if err := s.GetList(context.Background(), "/configmaps", bad, &corev1.ConfigMapList{}); err == nil {
			t.Errorf("GetList with %+v succeeded", bad)
		}
	}
}

func testListExact(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	create(t, s, newCM("ns", "a", "1", nil))
	create(t, s, newCM("ns", "b", "1", nil))
	snap := currentRev(t, b)
	want := names(list(t, s, "/configmaps", storage.ListOptions{}).Items)
	update(t, s, "ns", "a", "2")
	del(t, s, "ns", "b")
	create(t, s, newCM("ns", "c", "1", nil))
	create(t, s, newCM("ns", "0", "1", nil))
	l := list(t, s, "/configmaps", storage.ListOptions{ResourceVersion: rvString(snap), ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	diff(t, "snapshot at "+rvString(snap), want, names(l.Items))
	diff(t, "newest", []string{"ns/0=1", "ns/a=2", "ns/c=1"}, names(list(t, s, "/configmaps", storage.ListOptions{}).Items))

	// Pages of a list at an exact revision read that snapshot, and so does
	// a paged list at a resourceVersion without a match (as Kubernetes has
	// always served limit with resourceVersion).
	for _, match := range []metav1.ResourceVersionMatch{metav1.ResourceVersionMatchExact, ""} {
		var got []string
		opts := storage.ListOptions{Recursive: true, ResourceVersion: rvString(snap), ResourceVersionMatch: match, Predicate: storage.Predicate{Limit: 1}}
		for range 10 {
			l := &corev1.ConfigMapList{}
			if err := s.GetList(context.Background(), "/configmaps", opts, l); err != nil {
				t.Fatalf("paged list at %d (match %q): %v", snap, match, err)
			}
			if l.ResourceVersion != rvString(snap) {
				t.Errorf("page resourceVersion %s, want %d", l.ResourceVersion, snap)
			}
			got = append(got, names(l.Items)...)
			if l.Continue == "" {
				break
			}
			opts.ResourceVersion, opts.ResourceVersionMatch, opts.Predicate.Continue = "", "", l.Continue
		}
		diff(t, fmt.Sprintf("pages at %d (match %q)", snap, match), want, got)
	}
}

// pageAll lists key page by page with limit and returns the items, the
// resourceVersion of each page and the number of pages. between runs after
// every page but the last.
func pageAll(t testing.TB, s storage.Interface, key string, limit int64, pred storage.Predicate, between func(page int)) ([]string, []string, int) {
	t.Helper()
	var all, rvs []string
	pred.Limit = limit
	for page := 0; ; page++ {
		if page > 1000 {
			t.Fatal("pagination does not end")
		}
		l := list(t, s, key, storage.ListOptions{Predicate: pred})
		if int64(len(l.Items)) > limit {
			t.Fatalf("page %d has %d items, limit %d", page, len(l.Items), limit)
		}
		all = append(all, names(l.Items)...)
		rvs = append(rvs, l.ResourceVersion)
		if l.Continue == "" {
			return all, rvs, page + 1
		}
		if len(l.Items) == 0 {
			t.Errorf("page %d is empty but has a continue token", page)
		}
		pred.Continue = l.Continue
		if between != nil {
			between(page)
		}
	}
}

func testListPagination(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	var want []string
	for i := range 10 {
		name := fmt.Sprintf("cm-%02d", i)
		create(t, s, newCM("ns", name, "1", nil))
		want = append(want, "ns/"+name+"=1")
	}
	create(t, s, newCM("ns2", "other", "1", nil))
	for _, limit := range []int64{1, 3, 5, 10, 11, 100} {
		t.Run(fmt.Sprintf("limit %d", limit), func(t *testing.T) {
			got, rvs, pages := pageAll(t, s, "/configmaps/ns", limit, storage.Predicate{}, nil)
			diff(t, "all pages", want, got)
			wantPages := (10 + int(limit) - 1) / int(limit)
			if pages != wantPages {
				t.Errorf("%d pages, want %d", pages, wantPages)
			}
			for _, rv := range rvs {
				if rv != rvs[0] {
					t.Errorf("page resourceVersions %v differ", rvs)
				}
			}
		})
	}
}

func testListPaginationFiltered(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	var want []string
	for i := range 20 {
		name := fmt.Sprintf("cm-%02d", i)
		lbl := map[string]string{"even": fmt.Sprint(i%2 == 0)}
		create(t, s, newCM("ns", name, "1", lbl))
		if i%2 == 0 {
			want = append(want, "ns/"+name+"=1")
		}
	}
	sel := labels.SelectorFromSet(labels.Set{"even": "true"})
	for _, limit := range []int64{1, 3, 10} {
		t.Run(fmt.Sprintf("limit %d", limit), func(t *testing.T) {
			got, _, _ := pageAll(t, s, "/configmaps/ns", limit, storage.Predicate{Label: sel}, nil)
			diff(t, "filtered pages", want, got)
		})
	}
}

func testListPaginationPinned(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	var want []string
	for i := range 12 {
		name := fmt.Sprintf("cm-%02d", i)
		create(t, s, newCM("ns", name, "1", nil))
		want = append(want, "ns/"+name+"=1")
	}
	n := 0
	got, rvs, _ := pageAll(t, s, "/configmaps/ns", 4, storage.Predicate{}, func(page int) {
		// Writes between pages must not show in the paged list.
		n++
		create(t, s, newCM("ns", fmt.Sprintf("cm-%02d-new", page*4+5), "1", nil))
		create(t, s, newCM("ns", fmt.Sprintf("a-%d", n), "1", nil))
		update(t, s, "ns", fmt.Sprintf("cm-%02d", page*4+6), "changed")
		del(t, s, "ns", fmt.Sprintf("cm-%02d", page*4+7))
	})
	diff(t, "pages read the first page's snapshot", want, got)
	for _, rv := range rvs {
		if rv != rvs[0] {
			t.Errorf("page resourceVersions %v differ", rvs)
		}
	}
}

func testListBadContinue(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	for i := range 3 {
		create(t, s, newCM("ns", fmt.Sprintf("cm-%d", i), "1", nil))
	}
	l := list(t, s, "/configmaps/ns", storage.ListOptions{Predicate: storage.Predicate{Limit: 1}})
	if l.Continue == "" {
		t.Fatal("no continue token")
	}
	ctx := context.Background()
	for _, tc := range []struct{ name, token string }{
		{"not base64", "!!!"},
		{"not json", "bm90IGpzb24"},
		{"no revision", "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJzdGFydCI6ImEifQ"},
		{"escapes prefix", "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6Miwic3RhcnQiOiIuLi9vdGhlciJ9"},
		{"wrong version", "eyJ2IjoieCIsInJ2IjoyLCJzdGFydCI6ImEifQ"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := s.GetList(ctx, "/configmaps/ns", storage.ListOptions{Recursive: true, Predicate: storage.Predicate{Limit: 1, Continue: tc.token}}, &corev1.ConfigMapList{})
			wantCode(t, err, storage.ErrCodeInvalidContinue, "GetList with a bad token")
			if !strings.Contains(err.Error(), "continue") {
				t.Errorf("error %q does not say what is wrong", err)
			}
		})
	}
	// A token does not combine with an explicit resourceVersion.
	err := s.GetList(ctx, "/configmaps/ns", storage.ListOptions{Recursive: true, ResourceVersion: l.ResourceVersion, Predicate: storage.Predicate{Limit: 1, Continue: l.Continue}}, &corev1.ConfigMapList{})
	if err == nil {
		t.Error("continue with a resourceVersion succeeded")
	}
}

func testCompaction(t *testing.T, b storage.Backend) {
	c, ok := b.(Compactor)
	if !ok {
		t.Skipf("%T does not implement storagetest.Compactor", b)
	}
	s := configMaps(t, b)
	ctx := context.Background()
	for i := range 5 {
		create(t, s, newCM("ns", fmt.Sprintf("cm-%d", i), "1", nil))
	}
	old := currentRev(t, b)
	l := list(t, s, "/configmaps/ns", storage.ListOptions{Predicate: storage.Predicate{Limit: 2}})
	update(t, s, "ns", "cm-0", "2")
	del(t, s, "ns", "cm-1")
	mid := currentRev(t, b)
	update(t, s, "ns", "cm-2", "2")
	if err := c.Compact(ctx, mid); err != nil {
		t.Fatalf("Compact: %v", err)
	}
	err := s.GetList(ctx, "/configmaps/ns", storage.ListOptions{Recursive: true, ResourceVersion: rvString(old), ResourceVersionMatch: metav1.ResourceVersionMatchExact}, &corev1.ConfigMapList{})
	wantCode(t, err, storage.ErrCodeExpired, "exact list at a compacted revision")
	if !storage.IsExpired(err) {
		t.Errorf("IsExpired(%v) = false", err)
	}
	err = s.GetList(ctx, "/configmaps/ns", storage.ListOptions{Recursive: true, Predicate: storage.Predicate{Limit: 2, Continue: l.Continue}}, &corev1.ConfigMapList{})
	wantCode(t, err, storage.ErrCodeExpired, "continue at a compacted revision")
	expectWatchExpired(t, s, "/configmaps/ns", rvString(old))

	// The compaction revision itself and newer stay readable, and so does
	// the current state.
	l2 := list(t, s, "/configmaps/ns", storage.ListOptions{ResourceVersion: rvString(mid), ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	diff(t, "list at the compaction revision", []string{"ns/cm-0=2", "ns/cm-2=1", "ns/cm-3=1", "ns/cm-4=1"}, names(l2.Items))
	diff(t, "newest list", []string{"ns/cm-0=2", "ns/cm-2=2", "ns/cm-3=1", "ns/cm-4=1"}, names(list(t, s, "/configmaps/ns", storage.ListOptions{}).Items))
	w, err := s.Watch(ctx, "/configmaps/ns", storage.ListOptions{Recursive: true, ResourceVersion: rvString(mid)})
	if err != nil {
		t.Fatalf("watch from the compaction revision: %v", err)
	}
	defer w.Stop()
	e := nextEvent(t, w)
	if e.Type != "MODIFIED" || e.Object.(*corev1.ConfigMap).Name != "cm-2" {
		t.Errorf("watch from the compaction revision got %s %v", e.Type, e.Object)
	}
}
