package storagetest

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kplane/kplane/pkg/storage"
)

var malformedTests = []test{
	{name: "MalformedListOptions", run: testMalformedListOptions},
	{name: "MalformedWatchOptions", run: testMalformedWatchOptions},
	{name: "WatchTooLargeResourceVersion", run: testWatchTooLarge},
}

// malformedLists are GetList and Watch options no backend can serve,
// whatever it stores: each fails with ErrCodeInvalidRequest.
var malformedLists = []struct {
	name  string
	opts  storage.ListOptions
	watch bool // also malformed for Watch
}{
	{name: "resourceVersion abc", opts: storage.ListOptions{ResourceVersion: "abc"}, watch: true},
	{name: "negative resourceVersion", opts: storage.ListOptions{ResourceVersion: "-1"}, watch: true},
	{name: "resourceVersion overflows", opts: storage.ListOptions{ResourceVersion: "18446744073709551616"}, watch: true},
	{name: "negative limit", opts: storage.ListOptions{Predicate: storage.Predicate{Limit: -1}}},
	{name: "exact without resourceVersion", opts: storage.ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchExact}},
	{name: "exact at 0", opts: storage.ListOptions{ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchExact}},
	{name: "not older than without resourceVersion", opts: storage.ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}},
	{name: "unknown match", opts: storage.ListOptions{ResourceVersion: "1", ResourceVersionMatch: "Sometimes"}},
	{name: "field selector without GetAttrs", opts: storage.ListOptions{Predicate: storage.Predicate{
		Label: labels.Everything(), Field: fields.OneTermEqualSelector("spec.nodeName", "n1"),
	}}, watch: true},
}

func testMalformedListOptions(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	ctx := context.Background()
	create(t, s, newCM("ns", "a", "1", nil))
	rev := currentRev(t, b)
	for _, tc := range malformedLists {
		t.Run(tc.name, func(t *testing.T) {
			for _, recursive := range []bool{true, false} {
				opts := tc.opts
				opts.Recursive = recursive
				key := cmKey("ns", "a")
				if recursive {
					key = "/configmaps/ns"
				}
				err := s.GetList(ctx, key, opts, &corev1.ConfigMapList{})
				wantCode(t, err, storage.ErrCodeInvalidRequest, "GetList of "+key)
			}
		})
	}
	if cur := currentRev(t, b); cur != rev {
		t.Errorf("malformed lists moved the revision from %d to %d", rev, cur)
	}
}

func testMalformedWatchOptions(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	ctx := context.Background()
	create(t, s, newCM("ns", "a", "1", nil))
	for _, tc := range malformedLists {
		if !tc.watch {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.Recursive = true
			w, err := s.Watch(ctx, "/configmaps/ns", opts)
			if err == nil {
				w.Stop()
			}
			wantCode(t, err, storage.ErrCodeInvalidRequest, "Watch")
		})
	}
}

// testWatchTooLarge checks that a watch from a revision not written yet
// fails at once with ErrCodeTooLargeResourceVersion (the API server's 504
// that clients retry), rather than waiting for the revision to come, while
// a watch from the current revision starts.
func testWatchTooLarge(t *testing.T, b storage.Backend) {
	s := configMaps(t, b)
	ctx := context.Background()
	create(t, s, newCM("ns", "a", "1", nil))
	cur := currentRev(t, b)
	yes := true
	for _, tc := range []struct {
		name string
		key  string
		opts storage.ListOptions
	}{
		{"prefix", "/configmaps/ns", storage.ListOptions{Recursive: true}},
		{"single key", cmKey("ns", "a"), storage.ListOptions{}},
		{"with initial events", "/configmaps/ns", storage.ListOptions{Recursive: true, SendInitialEvents: &yes,
			ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, ProgressNotify: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.ResourceVersion = rvString(cur + 10)
			w, err := s.Watch(ctx, tc.key, opts)
			if err == nil {
				w.Stop()
			}
			wantCode(t, err, storage.ErrCodeTooLargeResourceVersion, "Watch from a future revision")
			opts.ResourceVersion = rvString(cur)
			w, err = s.Watch(ctx, tc.key, opts)
			if err != nil {
				t.Fatalf("Watch from the current revision: %v", err)
			}
			w.Stop()
		})
	}
}
