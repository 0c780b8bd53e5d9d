package storage

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ParseResourceVersion reads a resourceVersion as a revision. "" is 0, which
// callers read as "no particular revision"; anything but a base-10 unsigned
// integer fails with ErrCodeInvalidRequest naming the bad value.
func ParseResourceVersion(rv string) (uint64, error) {
	if rv == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		// Worded as kube-apiserver words it.
		return 0, NewError(ErrCodeInvalidRequest, "", 0,
			"invalid resource version: "+field.Invalid(field.NewPath("resourceVersion"), rv, err.Error()).Error())
	}
	return n, nil
}

// FormatResourceVersion writes a revision as a resourceVersion; 0 is "".
func FormatResourceVersion(rev uint64) string {
	if rev == 0 {
		return ""
	}
	return strconv.FormatUint(rev, 10)
}

// ObjectResourceVersion returns the revision in obj's metadata.resourceVersion,
// 0 when it is unset.
func ObjectResourceVersion(obj runtime.Object) (uint64, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return 0, fmt.Errorf("read resourceVersion of %T: %w", obj, err)
	}
	return ParseResourceVersion(m.GetResourceVersion())
}

// SetObjectResourceVersion sets obj's metadata.resourceVersion to rev ("" for 0).
func SetObjectResourceVersion(obj runtime.Object, rev uint64) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Errorf("set resourceVersion of %T: %w", obj, err)
	}
	m.SetResourceVersion(FormatResourceVersion(rev))
	return nil
}

// SetListResourceVersion sets a list's metadata.resourceVersion to rev and its
// continue token to token.
func SetListResourceVersion(listObj runtime.Object, rev uint64, token string) error {
	m, err := meta.ListAccessor(listObj)
	if err != nil {
		return fmt.Errorf("set resourceVersion of list %T: %w", listObj, err)
	}
	m.SetResourceVersion(FormatResourceVersion(rev))
	m.SetContinue(token)
	return nil
}
