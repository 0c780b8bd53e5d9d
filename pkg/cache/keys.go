package cache

import (
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ObjectKey returns the store key of obj: "namespace/name" for namespaced
// objects and "name" for cluster-scoped ones. It fails when obj has no name.
func ObjectKey(obj metav1.Object) (string, error) {
	name := obj.GetName()
	if name == "" {
		return "", errors.New("object has no name")
	}
	if ns := obj.GetNamespace(); ns != "" {
		return ns + "/" + name, nil
	}
	return name, nil
}

// SplitObjectKey splits a key made by ObjectKey into namespace and name;
// the namespace is empty for cluster-scoped keys.
func SplitObjectKey(key string) (namespace, name string, err error) {
	parts := strings.Split(key, "/")
	switch {
	case len(parts) == 1 && parts[0] != "":
		return "", parts[0], nil
	case len(parts) == 2 && parts[0] != "" && parts[1] != "":
		return parts[0], parts[1], nil
	}
	return "", "", fmt.Errorf("invalid object key %q", key)
}

// DeletedFinalStateUnknown is the tombstone of an object that was deleted
// while the watch was down: a relist found it gone, so its final state is
// unknown. Obj is its last known state. Delete handlers receive either the
// object itself or a DeletedFinalStateUnknown[T]; Unwrap handles both.
type DeletedFinalStateUnknown[T Object] struct {
	Key string
	Obj T
}

// Unwrap returns the object a delete handler received: obj itself when it is
// a T, or the last known state inside a DeletedFinalStateUnknown[T] (value or
// pointer). Anything else, including a nil object, is an error.
func Unwrap[T Object](obj any) (T, error) {
	var zero T
	switch o := obj.(type) {
	case T:
		if isNil(o) {
			return zero, errors.New("nil object")
		}
		return o, nil
	case DeletedFinalStateUnknown[T]:
		if isNil(o.Obj) {
			return zero, fmt.Errorf("tombstone %q holds no object", o.Key)
		}
		return o.Obj, nil
	case *DeletedFinalStateUnknown[T]:
		if o == nil || isNil(o.Obj) {
			return zero, errors.New("tombstone holds no object")
		}
		return o.Obj, nil
	}
	return zero, fmt.Errorf("unexpected object of type %T, want %T or a tombstone of it", obj, zero)
}

// isNil reports whether obj is the zero T: a nil interface or a typed nil
// pointer (Object types are pointers).
func isNil[T Object](obj T) bool {
	var zero T
	return any(obj) == any(zero)
}
