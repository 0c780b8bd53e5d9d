package policy_test

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// emptySource is a cluster without objects.
type emptySource struct{}

func (emptySource) Get(_ context.Context, gvr schema.GroupVersionResource, _, name string) (runtime.Object, error) {
	return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
}

func (s emptySource) Fetch(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) (runtime.Object, error) {
	return s.Get(ctx, gvr, ns, name)
}

func (emptySource) List(context.Context, schema.GroupVersionResource, string) ([]runtime.Object, uint64, error) {
	return nil, 1, nil
}

func (emptySource) UpdateStatus(_ context.Context, gvr schema.GroupVersionResource, _ runtime.Object) (runtime.Object, error) {
	return nil, apierrors.NewNotFound(gvr.GroupResource(), "")
}
