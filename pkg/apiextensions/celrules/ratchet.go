package celrules

import (
	"reflect"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// ratchet tracks, while validation descends, the correlation of the current
// value with its old value (current), or, where there is none, that of the
// nearest ancestor that has one (parent). The zero ratchet never ratchets.
type ratchet struct {
	current, parent *correlation
}

// correlation is a value, its old value, and whether they are equal
// (computed once).
type correlation struct {
	schema     *apiextensionsv1.JSONSchemaProps
	value, old any
	equal      *bool
	// oldByKey indexes old list-type=map items by key, once needed.
	oldByKey map[string]any
}

// unchanged reports whether a failure here may be ratcheted.
func (rt ratchet) unchanged() bool {
	if rt.current != nil {
		return rt.current.unchanged()
	}
	return rt.parent.unchanged()
}

func (rt ratchet) key(field string) ratchet {
	if rt.current == nil {
		return rt
	}
	if rt.parent == nil && (field == "apiVersion" || field == "kind") {
		return ratchet{} // the type of a resource is never ratcheted
	}
	return ratchet{current: rt.current.key(field), parent: rt.current}
}

func (rt ratchet) index(i int) ratchet {
	if rt.current == nil {
		return rt
	}
	return ratchet{current: rt.current.index(i), parent: rt.current}
}

// key correlates a property or map entry present in both values.
func (c *correlation) key(field string) *correlation {
	if c == nil || c.schema == nil {
		return nil
	}
	m, ok := c.value.(map[string]any)
	o, ook := c.old.(map[string]any)
	if !ok || !ook {
		return nil
	}
	v, ok := m[field]
	ov, ook := o[field]
	if !ok || !ook {
		return nil
	}
	s := propertySchema(c.schema, field)
	if s == nil {
		return nil
	}
	return &correlation{schema: s, value: v, old: ov}
}

// index correlates a list-type=map item with the old item of the same keys;
// items of other lists have no correlation.
func (c *correlation) index(i int) *correlation {
	if c == nil || c.schema == nil || c.schema.Items == nil || c.schema.Items.Schema == nil {
		return nil
	}
	l, ok := c.value.([]any)
	ol, ook := c.old.([]any)
	if !ok || !ook || i >= len(l) || c.schema.XListType == nil || *c.schema.XListType != "map" {
		return nil
	}
	k, ok := listMapKey(c.schema.XListMapKeys, l[i])
	if !ok {
		return nil
	}
	if c.oldByKey == nil {
		c.oldByKey = indexByKey(c.schema.XListMapKeys, ol)
	}
	ov, ok := c.oldByKey[k]
	if !ok {
		return nil
	}
	return &correlation{schema: c.schema.Items.Schema, value: l[i], old: ov}
}

func (c *correlation) unchanged() bool {
	if c == nil {
		return false
	}
	if c.equal == nil {
		eq := c.computeEqual()
		c.equal = &eq
	}
	return *c.equal
}

func (c *correlation) computeEqual() bool {
	switch {
	case c.value == nil && c.old == nil:
		return true
	case c.value == nil || c.old == nil:
		return false
	}
	switch v := c.value.(type) {
	case []any:
		o, ok := c.old.([]any)
		if !ok || len(o) != len(v) {
			return false
		}
		if c.schema.XListType == nil || *c.schema.XListType != "map" {
			return reflect.DeepEqual(v, o)
		}
		for i := range v {
			if !c.index(i).unchanged() {
				return false
			}
		}
		return true
	case map[string]any:
		o, ok := c.old.(map[string]any)
		if !ok || len(o) != len(v) {
			return false
		}
		for k := range v {
			if !c.key(k).unchanged() {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(c.value, c.old)
}

func propertySchema(s *apiextensionsv1.JSONSchemaProps, name string) *apiextensionsv1.JSONSchemaProps {
	if p, ok := s.Properties[name]; ok {
		return &p
	}
	if ap := s.AdditionalProperties; ap != nil && ap.Schema != nil {
		return ap.Schema
	}
	return nil
}
