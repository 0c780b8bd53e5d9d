package cel

import (
	"encoding/base64"
	"math"
	"reflect"
	"time"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
)

// Value converts a JSON-decoded value (map[string]any, []any, string,
// int64, float64, bool, nil) of type t to a CEL value. Only exposed, non-null
// fields of objects are kept, under their escaped names; numbers follow the schema
// (integer or number); formatted strings are parsed, and a string that does
// not parse becomes an error value, reported if an expression reads it.
// x-kubernetes-list-type set and map lists compare equal regardless of order
// and merge when added.
// Value does not retain v.
func (t *DeclType) Value(v any) ref.Val {
	if v == nil {
		return types.NullValue
	}
	switch t.kind {
	case kindObject:
		m, ok := v.(map[string]any)
		if !ok {
			return unexpected(v)
		}
		known := make(map[ref.Val]ref.Val, len(t.Fields))
		for name, f := range t.Fields {
			// a property set to null is absent, as in Kubernetes; null
			// map values and list items stay null
			if fv, ok := m[f.Name]; ok && fv != nil {
				known[types.String(name)] = f.Type.Value(fv)
			}
		}
		return objectValue{Mapper: types.NewRefValMap(types.DefaultTypeAdapter, known), raw: m, decl: t}
	case kindMap:
		m, ok := v.(map[string]any)
		if !ok {
			return unexpected(v)
		}
		out := make(map[ref.Val]ref.Val, len(m))
		for k, ev := range m {
			out[types.String(k)] = t.ElemType.Value(ev)
		}
		return types.NewRefValMap(types.DefaultTypeAdapter, out)
	case kindList:
		l, ok := v.([]any)
		if !ok {
			return unexpected(v)
		}
		out := make([]ref.Val, len(l))
		for i, ev := range l {
			out[i] = t.ElemType.Value(ev)
		}
		list := types.NewRefValList(types.DefaultTypeAdapter, out)
		switch t.listType {
		case "set":
			return setList{Lister: list}
		case "map":
			if len(t.mapKeys) > 0 && t.ElemType.kind == kindObject {
				return mapList{Lister: list, keys: t.escapedKeys()}
			}
		}
		return list
	case kindDyn:
		return types.DefaultTypeAdapter.NativeToValue(v)
	case kindString:
		if s, ok := v.(string); ok {
			return types.String(s)
		}
	case kindBytes:
		if s, ok := v.(string); ok {
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return types.NewErr("invalid base64 data: %v", err)
			}
			return types.Bytes(b)
		}
	case kindDuration:
		if s, ok := v.(string); ok {
			d, err := strfmt.ParseDuration(s)
			if err != nil {
				return types.NewErr("invalid duration %q: %v", s, err)
			}
			return types.Duration{Duration: d}
		}
	case kindDate:
		if s, ok := v.(string); ok {
			d, err := time.Parse(strfmt.RFC3339FullDate, s)
			if err != nil {
				return types.NewErr("invalid date %q: %v", s, err)
			}
			return types.Timestamp{Time: d}
		}
	case kindTimestamp:
		if s, ok := v.(string); ok {
			d, err := strfmt.ParseDateTime(s)
			if err != nil {
				return types.NewErr("invalid date-time %q: %v", s, err)
			}
			return types.Timestamp{Time: time.Time(d)}
		}
	case kindBool:
		if b, ok := v.(bool); ok {
			return types.Bool(b)
		}
	case kindInt:
		switch n := v.(type) {
		case int64:
			return types.Int(n)
		case int:
			return types.Int(n)
		case float64:
			if n == math.Trunc(n) && n >= math.MinInt64 && n < math.MaxInt64 {
				return types.Int(int64(n))
			}
			return types.Double(n)
		}
	case kindDouble:
		switch n := v.(type) {
		case int64:
			return types.Double(float64(n))
		case int:
			return types.Double(float64(n))
		case float64:
			return types.Double(n)
		}
	}
	return unexpected(v)
}

// unexpected converts a value that does not match its schema as best it can;
// schema validation reports the mismatch.
func unexpected(v any) ref.Val {
	if i, ok := v.(int); ok {
		return types.Int(i)
	}
	return types.DefaultTypeAdapter.NativeToValue(v)
}

func (t *DeclType) escapedKeys() []string {
	keys := make([]string, 0, len(t.mapKeys))
	for _, k := range t.mapKeys {
		if e, ok := Escape(k); ok {
			keys = append(keys, e)
		}
	}
	return keys
}

// objectValue is an object: its exposed, non-null properties are readable by
// their escaped names; its size counts every property, and equality also
// compares the properties rules cannot see (preserved unknown fields,
// metadata beyond name and generateName), as in Kubernetes.
type objectValue struct {
	traits.Mapper
	raw  map[string]any
	decl *DeclType
}

// Find looks a property up by its escaped name, or a reserved word
// unescaped (self.metadata.namespace for self.metadata.__namespace__).
func (o objectValue) Find(key ref.Val) (ref.Val, bool) {
	v, ok := o.Mapper.Find(key)
	if ok {
		return v, true
	}
	if k, isStr := key.(types.String); isStr && celReserved[string(k)] {
		return o.Mapper.Find(types.String("__" + string(k) + "__"))
	}
	return v, false
}

// Get is Find, with an error for absent properties.
func (o objectValue) Get(key ref.Val) ref.Val {
	if v, ok := o.Find(key); ok {
		return v
	}
	return o.Mapper.Get(key)
}

// Size is the number of properties, seen or not.
func (o objectValue) Size() ref.Val { return types.Int(len(o.raw)) }

// Equal compares exposed properties as CEL values and the others as JSON.
func (o objectValue) Equal(other ref.Val) ref.Val {
	p, ok := other.(objectValue)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	if len(o.raw) != len(p.raw) {
		return types.False
	}
	exposed := make(map[string]bool, len(o.decl.Fields))
	for name, f := range o.decl.Fields {
		exposed[f.Name] = true
		a, aok := o.Find(types.String(name))
		b, bok := p.Find(types.String(name))
		if aok != bok {
			return types.False
		}
		if !aok {
			continue
		}
		if eq := a.Equal(b); eq != types.True {
			return eq
		}
	}
	for k, v := range o.raw {
		if exposed[k] {
			continue
		}
		if pv, ok := p.raw[k]; ok && !reflect.DeepEqual(v, pv) {
			return types.False
		}
	}
	return types.True
}
