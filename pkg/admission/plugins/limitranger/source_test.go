package limitranger

import (
	"context"
	"errors"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// fakeSource is an admission.Source: cache is what Get and List see, store
// what Fetch sees in addition (objects the cache has not caught up with).
type fakeSource struct {
	cache   map[schema.GroupVersionResource][]runtime.Object
	store   map[schema.GroupVersionResource][]runtime.Object
	listErr error

	mu      sync.Mutex
	fetches int
}

func find(objs []runtime.Object, ns, name string) runtime.Object {
	for _, o := range objs {
		m, _ := meta.Accessor(o)
		if m.GetNamespace() == ns && m.GetName() == name {
			return o
		}
	}
	return nil
}

func (s *fakeSource) Get(_ context.Context, gvr schema.GroupVersionResource, ns, name string) (runtime.Object, error) {
	if o := find(s.cache[gvr], ns, name); o != nil {
		return o, nil
	}
	return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
}

func (s *fakeSource) List(_ context.Context, gvr schema.GroupVersionResource, ns string) ([]runtime.Object, uint64, error) {
	if s.listErr != nil {
		return nil, 0, s.listErr
	}
	var out []runtime.Object
	for _, o := range s.cache[gvr] {
		m, _ := meta.Accessor(o)
		if ns == "" || m.GetNamespace() == ns {
			out = append(out, o)
		}
	}
	return out, 1, nil
}

func (s *fakeSource) Fetch(_ context.Context, gvr schema.GroupVersionResource, ns, name string) (runtime.Object, error) {
	s.mu.Lock()
	s.fetches++
	s.mu.Unlock()
	if o := find(s.cache[gvr], ns, name); o != nil {
		return o, nil
	}
	if o := find(s.store[gvr], ns, name); o != nil {
		return o, nil
	}
	return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
}

func (s *fakeSource) UpdateStatus(context.Context, schema.GroupVersionResource, runtime.Object) (runtime.Object, error) {
	return nil, errors.New("not supported")
}
