package defaultstorageclass

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// fakeSource is an admission.Source over a fixed set of objects.
type fakeSource struct {
	objs    map[schema.GroupVersionResource][]runtime.Object
	listErr error
}

func (s *fakeSource) Get(_ context.Context, gvr schema.GroupVersionResource, ns, name string) (runtime.Object, error) {
	for _, o := range s.objs[gvr] {
		m, _ := meta.Accessor(o)
		if m.GetNamespace() == ns && m.GetName() == name {
			return o, nil
		}
	}
	return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
}

func (s *fakeSource) List(_ context.Context, gvr schema.GroupVersionResource, ns string) ([]runtime.Object, uint64, error) {
	if s.listErr != nil {
		return nil, 0, s.listErr
	}
	var out []runtime.Object
	for _, o := range s.objs[gvr] {
		m, _ := meta.Accessor(o)
		if ns == "" || m.GetNamespace() == ns {
			out = append(out, o)
		}
	}
	return out, 1, nil
}

func (s *fakeSource) Fetch(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) (runtime.Object, error) {
	return s.Get(ctx, gvr, ns, name)
}

func (s *fakeSource) UpdateStatus(context.Context, schema.GroupVersionResource, runtime.Object) (runtime.Object, error) {
	return nil, errors.New("not supported")
}
