package schema

import (
	"sort"
	"strconv"
)

// Prune removes from obj every field s does not specify, as kube-apiserver
// does when it decodes a custom resource. Fields under
// x-kubernetes-preserve-unknown-fields stay (their specified subfields are
// still pruned). With isResourceRoot, and in every
// x-kubernetes-embedded-resource object, apiVersion, kind and metadata are
// kept, and metadata is reduced to the fields of ObjectMeta: unknown ones
// are removed and reported, malformed ones (labels that are not a map of
// strings, ...) are dropped silently, and a metadata that is not an object
// is left for ObjectMeta validation to reject. Null values of fields that are
// neither nullable nor defaulted are removed as Kubernetes does, without
// being reported.
//
// It returns the paths of the removed unknown fields, sorted, in the form
// kube-apiserver warns about (`unknown field "spec.foo"`) or refuses with
// fieldValidation=Strict: "spec.foo", "spec.items[0].bar",
// "spec.template.metadata.foo". A nil s removes everything but the meta
// fields of a resource root.
func Prune(obj map[string]any, s *Structural, isResourceRoot bool) []string {
	if obj == nil {
		return nil
	}
	root := s
	p := pruner{}
	if isResourceRoot {
		root = asResourceRoot(s)
		p.unknown = coerceMetadata(nil, obj)
	}
	p.prune(obj, root)
	pruneNonNullableNulls(obj, s)
	// The root's metadata belongs to the registry: only embedded resources
	// are coerced, as kube-apiserver's decoder does.
	if s != nil {
		_, unknown := coerceEmbeddedMetadata(nil, obj, s, false, true)
		p.unknown = append(p.unknown, unknown...)
	}
	sort.Strings(p.unknown)
	return p.unknown
}

// pruner tracks the path of the value being pruned and collects the paths
// of the fields it removes.
type pruner struct {
	// path is the current path as string pieces: keys, "." and "[i]".
	path    []string
	unknown []string
}

func (p *pruner) pushKey(k string) int {
	n := len(p.path)
	if n > 0 {
		p.path = append(p.path, ".")
	}
	p.path = append(p.path, k)
	return n
}

func (p *pruner) pushIndex(i int) int {
	n := len(p.path)
	p.path = append(p.path, "["+strconv.Itoa(i)+"]")
	return n
}

func (p *pruner) record(k string) {
	n := p.pushKey(k)
	size := 0
	for _, s := range p.path {
		size += len(s)
	}
	b := make([]byte, 0, size)
	for _, s := range p.path {
		b = append(b, s...)
	}
	p.unknown = append(p.unknown, string(b))
	p.path = p.path[:n]
}

func (p *pruner) prune(x any, s *Structural) {
	if s != nil && s.XPreserveUnknownFields {
		p.pruneSpecified(x, s)
		return
	}
	switch x := x.(type) {
	case map[string]any:
		if s == nil {
			for _, k := range sortedKeys(x) {
				p.record(k)
				delete(x, k)
			}
			return
		}
		for _, k := range sortedKeys(x) {
			if s.XEmbeddedResource && metaFields[k] {
				continue
			}
			if prop, ok := s.Properties[k]; ok {
				n := p.pushKey(k)
				p.prune(x[k], prop)
				p.path = p.path[:n]
			} else if s.AdditionalProperties != nil {
				n := p.pushKey(k)
				p.prune(x[k], s.AdditionalProperties.Structural)
				p.path = p.path[:n]
			} else {
				if !metaFields[k] || len(p.path) > 0 {
					p.record(k)
				}
				delete(x, k)
			}
		}
	case []any:
		var items *Structural
		if s != nil {
			items = s.Items
		}
		for i, v := range x {
			n := p.pushIndex(i)
			p.prune(v, items)
			p.path = p.path[:n]
		}
	}
}

// pruneSpecified prunes below the specified fields of a value whose
// unknown fields are preserved.
func (p *pruner) pruneSpecified(x any, s *Structural) {
	if s == nil {
		return
	}
	switch x := x.(type) {
	case map[string]any:
		for _, k := range sortedKeys(x) {
			if s.XEmbeddedResource && metaFields[k] {
				continue
			}
			if prop, ok := s.Properties[k]; ok {
				n := p.pushKey(k)
				p.prune(x[k], prop)
				p.path = p.path[:n]
			} else if s.AdditionalProperties != nil {
				n := p.pushKey(k)
				p.prune(x[k], s.AdditionalProperties.Structural)
				p.path = p.path[:n]
			}
		}
	case []any:
		for i, v := range x {
			n := p.pushIndex(i)
			p.pruneSpecified(v, s.Items)
			p.path = p.path[:n]
		}
	}
}

// pruneNonNullableNulls removes nulls of fields that are not nullable and
// have no default; the defaulted ones are left for Default to fill.
func pruneNonNullableNulls(x any, s *Structural) {
	switch x := x.(type) {
	case map[string]any:
		for k, v := range x {
			fs := fieldSchema(k, s)
			if v == nil && fs != nil && !fs.Nullable && fs.Default == nil {
				delete(x, k)
			} else {
				pruneNonNullableNulls(v, fs)
			}
		}
	case []any:
		var items *Structural
		if s != nil {
			items = s.Items
		}
		for _, v := range x {
			pruneNonNullableNulls(v, items)
		}
	}
}

// fieldSchema is the schema of field k of an object with schema s.
func fieldSchema(k string, s *Structural) *Structural {
	if s == nil {
		return nil
	}
	if p, ok := s.Properties[k]; ok {
		return p
	}
	if s.AdditionalProperties != nil {
		return s.AdditionalProperties.Structural
	}
	return nil
}
