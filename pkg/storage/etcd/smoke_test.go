package etcd

import (
	"context"
	"testing"

	"encoding/json"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kplane/kplane/pkg/storage"
)

type jsonCodec struct{}

func (jsonCodec) Encode(obj runtime.Object) ([]byte, error)     { return json.Marshal(obj) }
func (jsonCodec) Decode(data []byte, into runtime.Object) error { return json.Unmarshal(data, into) }

func TestSmoke(t *testing.T) {
	b := newTestBackend(t, Config{})
	s, err := b.Storage(storage.ResourceConfig{Codec: jsonCodec{}, NewFunc: func() runtime.Object { return &corev1.Pod{} }, NewListFunc: func() runtime.Object { return &corev1.PodList{} }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	out := &corev1.Pod{}
	if err := s.Create(ctx, "/pods/default/a", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default"}}, out); err != nil {
		t.Fatal(err)
	}
	t.Logf("rv %s", out.ResourceVersion)
	l := &corev1.PodList{}
	if err := s.GetList(ctx, "/pods", storage.ListOptions{Recursive: true}, l); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d items rv %s", len(l.Items), l.ResourceVersion)
}
