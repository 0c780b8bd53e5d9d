package cache

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Lister reads objects from an informer's Indexer. It is safe for
// concurrent use and never blocks the informer. The objects it returns are
// shared with the cache and every other reader: never mutate them (DeepCopy
// first); the slices are the caller's.
type Lister[T Object] struct {
	indexer  *Indexer[T]
	resource schema.GroupResource
}

// NewLister returns a Lister over indexer; resource names the resource in
// NotFound errors.
func NewLister[T Object](indexer *Indexer[T], resource schema.GroupResource) *Lister[T] {
	return &Lister[T]{indexer: indexer, resource: resource}
}

// List returns the objects, in all namespaces, whose labels match selector
// (nil matches everything), ordered by namespace then name.
func (l *Lister[T]) List(selector labels.Selector) ([]T, error) {
	if selector == nil || selector.Empty() {
		return l.indexer.List(), nil
	}
	var out []T
	l.indexer.Range(func(_ string, obj T) bool {
		if selector.Matches(labels.Set(obj.GetLabels())) {
			out = append(out, obj)
		}
		return true
	})
	return out, nil
}

// Get returns the cluster-scoped object name, or a NotFound
// *apierrors.StatusError.
func (l *Lister[T]) Get(name string) (T, error) {
	obj, ok := l.indexer.GetByKey(name)
	if !ok {
		return obj, apierrors.NewNotFound(l.resource, name)
	}
	return obj, nil
}

// Namespace returns a Lister of the objects in namespace.
func (l *Lister[T]) Namespace(namespace string) NamespaceLister[T] {
	return NamespaceLister[T]{indexer: l.indexer, resource: l.resource, namespace: namespace}
}

// NamespaceLister reads the objects of one namespace; see Lister.
type NamespaceLister[T Object] struct {
	indexer   *Indexer[T]
	resource  schema.GroupResource
	namespace string
}

// List returns the objects of the namespace whose labels match selector
// (nil matches everything), ordered by namespace then name.
func (l NamespaceLister[T]) List(selector labels.Selector) ([]T, error) {
	objs, err := l.indexer.ByIndex(NamespaceIndex, l.namespace)
	if err != nil {
		return nil, err
	}
	if selector == nil || selector.Empty() {
		return objs, nil
	}
	out := objs[:0]
	for _, obj := range objs {
		if selector.Matches(labels.Set(obj.GetLabels())) {
			out = append(out, obj)
		}
	}
	return out, nil
}

// Get returns the object name of the namespace, or a NotFound
// *apierrors.StatusError.
func (l NamespaceLister[T]) Get(name string) (T, error) {
	obj, ok := l.indexer.GetByKey(l.namespace + "/" + name)
	if !ok {
		return obj, apierrors.NewNotFound(l.resource, name)
	}
	return obj, nil
}
