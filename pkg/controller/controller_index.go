package controller

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kplane/kplane/pkg/cache"
)

// ControllerUIDIndex names the index that AddControllerUIDIndex adds: an
// object is indexed by the uid of its controller, or, without one, as an
// orphan of its namespace.
const ControllerUIDIndex = "controllerUID"

// orphanIndexValue is the ControllerUIDIndex value of the objects of a
// namespace that have no controller. No uid starts with a slash.
func orphanIndexValue(namespace string) string { return "/orphan/" + namespace }

// ControllerUIDIndexFunc indexes obj by its controller's uid, or as an
// orphan of its namespace.
func ControllerUIDIndexFunc[T cache.Object](obj T) ([]string, error) {
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		return []string{string(ref.UID)}, nil
	}
	return []string{orphanIndexValue(obj.GetNamespace())}, nil
}

// AddControllerUIDIndex adds ControllerUIDIndex to x unless it has it
// already, so that every controller sharing an informer may call it.
func AddControllerUIDIndex[T cache.Object](x *cache.Indexer[T]) error {
	return AddIndex(x, ControllerUIDIndex, ControllerUIDIndexFunc[T])
}

// AddIndex adds the index name, computed by f, to x unless x has an index
// of that name already, so that every controller sharing an informer may
// call it with the same name and function.
func AddIndex[T cache.Object](x *cache.Indexer[T], name string, f cache.IndexFunc[T]) error {
	if _, ok := x.Indexers()[name]; ok {
		return nil
	}
	if err := x.AddIndexers(cache.Indexers[T]{name: f}); err != nil {
		// Another controller may have added it meanwhile.
		if _, ok := x.Indexers()[name]; ok {
			return nil
		}
		return fmt.Errorf("add index %s: %w", name, err)
	}
	return nil
}

// ControlledOrOrphaned returns the objects of namespace, from an indexer
// with ControllerUIDIndex, that the owner with the given uid controls, and
// those no one controls: the only ones a claim can keep or adopt. It
// reads two index entries instead of every object of the namespace, so a
// sync costs what the owner has, not what the namespace holds.
func ControlledOrOrphaned[T cache.Object](x *cache.Indexer[T], namespace string, uid types.UID) ([]T, error) {
	if uid == "" {
		return nil, errors.New("controller uid is empty")
	}
	owned, err := x.ByIndex(ControllerUIDIndex, string(uid))
	if err != nil {
		return nil, err
	}
	out := owned[:0]
	for _, obj := range owned {
		// A controller reference across namespaces is invalid: such an
		// object is not the owner's.
		if obj.GetNamespace() == namespace {
			out = append(out, obj)
		}
	}
	orphans, err := x.ByIndex(ControllerUIDIndex, orphanIndexValue(namespace))
	if err != nil {
		return nil, err
	}
	return append(out, orphans...), nil
}
