package cache_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/pkg/cache"
)

func TestLister(t *testing.T) {
	x := newIndexer(t)
	for _, p := range []*corev1.Pod{
		pod("a", "web1", "1", "app", "web"), pod("a", "db", "1", "app", "db"),
		pod("b", "web2", "1", "app", "web"), pod("", "node-scoped", "1"),
	} {
		if err := x.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	l := cache.NewLister(x, schema.GroupResource{Resource: "pods"})
	web := labels.SelectorFromSet(labels.Set{"app": "web"})
	tests := []struct {
		name string
		list func() ([]*corev1.Pod, error)
		want []string
	}{
		{"all", func() ([]*corev1.Pod, error) { return l.List(labels.Everything()) }, []string{"node-scoped", "a/db", "a/web1", "b/web2"}},
		{"nil selector", func() ([]*corev1.Pod, error) { return l.List(nil) }, []string{"node-scoped", "a/db", "a/web1", "b/web2"}},
		{"web everywhere", func() ([]*corev1.Pod, error) { return l.List(web) }, []string{"a/web1", "b/web2"}},
		{"nothing", func() ([]*corev1.Pod, error) { return l.List(labels.Nothing()) }, []string{}},
		{"namespace a", func() ([]*corev1.Pod, error) { return l.Namespace("a").List(labels.Everything()) }, []string{"a/db", "a/web1"}},
		{"web in a", func() ([]*corev1.Pod, error) { return l.Namespace("a").List(web) }, []string{"a/web1"}},
		{"empty namespace", func() ([]*corev1.Pod, error) { return l.Namespace("zzz").List(nil) }, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.list()
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, names(got)); d != "" {
				t.Error(d)
			}
		})
	}
	if p, err := l.Namespace("b").Get("web2"); err != nil || p.Name != "web2" {
		t.Errorf("Get b/web2 = %v, %v", p, err)
	}
	if p, err := l.Get("node-scoped"); err != nil || p.Name != "node-scoped" {
		t.Errorf("Get node-scoped = %v, %v", p, err)
	}
	if _, err := l.Namespace("a").Get("web2"); !apierrors.IsNotFound(err) {
		t.Errorf("Get a/web2: %v, want NotFound", err)
	}
	if _, err := l.Get("web1"); !apierrors.IsNotFound(err) {
		t.Errorf("cluster Get of a namespaced name: %v, want NotFound", err)
	}
}

func FuzzSplitObjectKey(f *testing.F) {
	for _, s := range []string{"ns/name", "name", "", "/", "a/b/c", "/x", "x/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		ns, name, err := cache.SplitObjectKey(key)
		if err != nil {
			return
		}
		if name == "" {
			t.Fatalf("%q: empty name without error", key)
		}
		back, err := cache.ObjectKey(pod(ns, name, ""))
		if err != nil || back != key {
			t.Fatalf("%q -> (%q, %q) -> %q, %v", key, ns, name, back, err)
		}
	})
}
