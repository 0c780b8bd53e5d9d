package storage

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// Empty reports whether p selects every object.
func (p Predicate) Empty() bool {
	return (p.Label == nil || p.Label.Empty()) && (p.Field == nil || p.Field.Empty())
}

// Validate checks that p can be evaluated: a field selector on anything but
// metadata.name and metadata.namespace needs GetAttrs, and Limit must not
// be negative. It fails with ErrCodeInvalidRequest.
func (p Predicate) Validate() error {
	if p.Limit < 0 {
		return NewError(ErrCodeInvalidRequest, "", 0, fmt.Sprintf("limit must not be negative, got %d", p.Limit))
	}
	if p.Field == nil || p.GetAttrs != nil {
		return nil
	}
	for _, r := range p.Field.Requirements() {
		if r.Field != "metadata.name" && r.Field != "metadata.namespace" {
			return NewError(ErrCodeInvalidRequest, "", 0,
				fmt.Sprintf("field selector on %q needs the resource's GetAttrs", r.Field))
		}
	}
	return nil
}

// Attrs returns the labels and fields p matches obj by: GetAttrs when set,
// otherwise the object's labels and its metadata.name and metadata.namespace.
func (p Predicate) Attrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	if p.GetAttrs != nil {
		return p.GetAttrs(obj)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil, fmt.Errorf("predicate attributes of %T: %w", obj, err)
	}
	return m.GetLabels(), fields.Set{"metadata.name": m.GetName(), "metadata.namespace": m.GetNamespace()}, nil
}

// Matches reports whether obj passes p's label and field selectors.
func (p Predicate) Matches(obj runtime.Object) (bool, error) {
	if p.Empty() {
		return true, nil
	}
	ls, fs, err := p.Attrs(obj)
	if err != nil {
		return false, err
	}
	return p.MatchesAttrs(ls, fs), nil
}

// MatchesAttrs reports whether labels ls and fields fs pass p's selectors.
func (p Predicate) MatchesAttrs(ls labels.Set, fs fields.Set) bool {
	if p.Label != nil && !p.Label.Empty() && !p.Label.Matches(ls) {
		return false
	}
	if p.Field != nil && !p.Field.Empty() && !p.Field.Matches(fs) {
		return false
	}
	return true
}

// Check reports whether p holds on obj, the stored object at key: a UID
// mismatch fails with ErrCodeInvalidObj, a resourceVersion mismatch with
// ErrCodeResourceVersionConflicts. A nil p always holds.
func (p *Preconditions) Check(key string, obj runtime.Object) error {
	if p == nil {
		return nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return NewError(ErrCodeInvalidObj, key, 0, err.Error())
	}
	if p.UID != nil && *p.UID != m.GetUID() {
		return NewError(ErrCodeInvalidObj, key, 0,
			fmt.Sprintf("precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, m.GetUID()))
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != m.GetResourceVersion() {
		return NewError(ErrCodeResourceVersionConflicts, key, 0,
			fmt.Sprintf("precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v",
				*p.ResourceVersion, m.GetResourceVersion()))
	}
	return nil
}
