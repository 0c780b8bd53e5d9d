package storagetest

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kplane/kplane/pkg/storage"
)

// eventTimeout bounds every wait for a watch event; reaching it fails the
// test rather than hanging it. It is a failure guard, not synchronization.
const eventTimeout = 20 * time.Second

// configMaps returns the ConfigMap store of b.
func configMaps(t testing.TB, b storage.Backend) storage.Interface {
	t.Helper()
	s, err := b.Storage(storage.ResourceConfig{
		Codec:       storage.JSONCodec{},
		NewFunc:     func() runtime.Object { return &corev1.ConfigMap{} },
		NewListFunc: func() runtime.Object { return &corev1.ConfigMapList{} },
	})
	if err != nil {
		t.Fatalf("Storage(configmaps): %v", err)
	}
	return s
}

// pods returns the Pod store of b, with spec.nodeName and status.phase selectable.
func pods(t testing.TB, b storage.Backend) storage.Interface {
	t.Helper()
	s, err := b.Storage(storage.ResourceConfig{
		Codec:       storage.JSONCodec{},
		NewFunc:     func() runtime.Object { return &corev1.Pod{} },
		NewListFunc: func() runtime.Object { return &corev1.PodList{} },
	})
	if err != nil {
		t.Fatalf("Storage(pods): %v", err)
	}
	return s
}

// podAttrs selects pods by labels, name, namespace, spec.nodeName and status.phase.
func podAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil, fmt.Errorf("not a pod: %T", obj)
	}
	return p.Labels, fields.Set{
		"metadata.name":      p.Name,
		"metadata.namespace": p.Namespace,
		"spec.nodeName":      p.Spec.NodeName,
		"status.phase":       string(p.Status.Phase),
	}, nil
}

func cmKey(ns, name string) string  { return "/configmaps/" + ns + "/" + name }
func podKey(ns, name string) string { return "/pods/" + ns + "/" + name }

// newCM returns a ConfigMap with data v=value and the given labels.
func newCM(ns, name, value string, lbls map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls, UID: types.UID("uid-" + ns + "-" + name)},
		Data:       map[string]string{"v": value},
	}
}

func newPod(ns, name, node string, lbls map[string]string) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}
}

// rvOf returns obj's resourceVersion as a revision, failing t when it is not one.
func rvOf(t testing.TB, obj runtime.Object) uint64 {
	t.Helper()
	m, err := meta.Accessor(obj)
	if err != nil {
		t.Fatalf("accessor: %v", err)
	}
	rv, err := strconv.ParseUint(m.GetResourceVersion(), 10, 64)
	if err != nil || rv == 0 {
		t.Fatalf("resourceVersion %q of %T %s is not a positive revision", m.GetResourceVersion(), obj, m.GetName())
	}
	return rv
}

func rvString(rv uint64) string { return strconv.FormatUint(rv, 10) }

// create stores cm and returns the stored object.
func create(t testing.TB, s storage.Interface, cm *corev1.ConfigMap) *corev1.ConfigMap {
	t.Helper()
	out := &corev1.ConfigMap{}
	if err := s.Create(context.Background(), cmKey(cm.Namespace, cm.Name), cm, out); err != nil {
		t.Fatalf("Create %s/%s: %v", cm.Namespace, cm.Name, err)
	}
	return out
}

// update sets data v=value on the ConfigMap at ns/name and returns the stored object.
func update(t testing.TB, s storage.Interface, ns, name, value string) *corev1.ConfigMap {
	t.Helper()
	return updateFn(t, s, ns, name, func(cm *corev1.ConfigMap) { cm.Data = map[string]string{"v": value} })
}

func updateFn(t testing.TB, s storage.Interface, ns, name string, fn func(*corev1.ConfigMap)) *corev1.ConfigMap {
	t.Helper()
	out := &corev1.ConfigMap{}
	err := s.GuaranteedUpdate(context.Background(), cmKey(ns, name), out, false, nil, func(cur runtime.Object) (runtime.Object, error) {
		cm := cur.(*corev1.ConfigMap)
		fn(cm)
		return cm, nil
	})
	if err != nil {
		t.Fatalf("GuaranteedUpdate %s/%s: %v", ns, name, err)
	}
	return out
}

func del(t testing.TB, s storage.Interface, ns, name string) *corev1.ConfigMap {
	t.Helper()
	out := &corev1.ConfigMap{}
	if err := s.Delete(context.Background(), cmKey(ns, name), out, nil, nil); err != nil {
		t.Fatalf("Delete %s/%s: %v", ns, name, err)
	}
	return out
}

func currentRev(t testing.TB, b storage.Backend) uint64 {
	t.Helper()
	rev, err := b.CurrentRevision(context.Background())
	if err != nil {
		t.Fatalf("CurrentRevision: %v", err)
	}
	return rev
}

// list lists ConfigMaps recursively under key with opts and returns the list.
func list(t testing.TB, s storage.Interface, key string, opts storage.ListOptions) *corev1.ConfigMapList {
	t.Helper()
	l := &corev1.ConfigMapList{}
	opts.Recursive = true
	if err := s.GetList(context.Background(), key, opts, l); err != nil {
		t.Fatalf("GetList %s: %v", key, err)
	}
	return l
}

// names returns namespace/name=value of each item.
func names(items []corev1.ConfigMap) []string {
	out := make([]string, 0, len(items))
	for _, cm := range items {
		out = append(out, cm.Namespace+"/"+cm.Name+"="+cm.Data["v"])
	}
	return out
}

func wantCode(t testing.TB, err error, code storage.ErrorCode, what string) {
	t.Helper()
	if !storage.HasCode(err, code) {
		t.Fatalf("%s: got error %v, want a storage error with code %d", what, err, code)
	}
}

func diff(t testing.TB, what string, want, got any) {
	t.Helper()
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s (-want +got):\n%s", what, d)
	}
}
