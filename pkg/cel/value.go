package cel

import (
	"encoding/base64"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
)

// Value converts a JSON-decoded value (map[string]any, []any, string,
// int64, float64, bool, nil) of type t to a CEL value. Only exposed fields of
// objects are kept, under their escaped names; numbers follow the schema
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
		if len(t.Fields) == 0 {
			// only unknown fields: exposed for equality only
			return types.DefaultTypeAdapter.NativeToValue(v)
		}
		out := make(map[ref.Val]ref.Val, len(t.Fields))
		for name, f := range t.Fields {
			if fv, ok := m[f.Name]; ok {
				out[types.String(name)] = f.Type.Value(fv)
			}
		}
		return types.NewRefValMap(types.DefaultTypeAdapter, out)
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

// setList is a list of x-kubernetes-list-type set: it equals any list with
// the same (scalar) elements in any order, and + is a union that keeps the
// order of the left side and appends what the right side adds.
type setList struct {
	traits.Lister
}

// Equal reports whether other holds the same elements, in any order.
func (l setList) Equal(other ref.Val) ref.Val {
	o, ok := other.(traits.Lister)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	if l.Size().Equal(o.Size()) != types.True {
		return types.False
	}
	mine, errVal := setKeys(l.Lister)
	if errVal != nil {
		return errVal
	}
	seen := map[any]bool{}
	for it := o.Iterator(); it.HasNext() == types.True; {
		k, errVal := setKey(it.Next())
		if errVal != nil {
			return errVal
		}
		if !mine[k] {
			return types.False
		}
		seen[k] = true
	}
	return types.Bool(len(seen) == len(mine))
}

// Add returns the union of l and other.
func (l setList) Add(other ref.Val) ref.Val {
	o, ok := other.(traits.Lister)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	have, errVal := setKeys(l.Lister)
	if errVal != nil {
		return errVal
	}
	out := listElements(l.Lister)
	for it := o.Iterator(); it.HasNext() == types.True; {
		v := it.Next()
		k, errVal := setKey(v)
		if errVal != nil {
			return errVal
		}
		if !have[k] {
			have[k] = true
			out = append(out, v)
		}
	}
	return setList{Lister: types.NewRefValList(types.DefaultTypeAdapter, out)}
}

func setKeys(l traits.Lister) (map[any]bool, ref.Val) {
	keys := map[any]bool{}
	for it := l.Iterator(); it.HasNext() == types.True; {
		k, errVal := setKey(it.Next())
		if errVal != nil {
			return nil, errVal
		}
		keys[k] = true
	}
	return keys, nil
}

// setKey is a comparable identity of a scalar element.
func setKey(v ref.Val) (any, ref.Val) {
	switch v.(type) {
	case traits.Lister, traits.Mapper:
		return nil, types.NewErr("listSet operations are only supported on lists of scalar values")
	}
	raw := v.Value()
	if raw != nil && !reflect.TypeOf(raw).Comparable() {
		return fmt.Sprintf("%#v", raw), nil
	}
	return raw, nil
}

// mapList is a list of x-kubernetes-list-type map: items are identified by
// their key fields (escaped names in keys); it equals any list with the same
// items in any order, and + replaces the items of l whose keys other has and
// appends the rest.
type mapList struct {
	traits.Lister
	keys []string
}

// Equal reports whether other holds the same items, in any order.
func (l mapList) Equal(other ref.Val) ref.Val {
	o, ok := other.(traits.Lister)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	if l.Size().Equal(o.Size()) != types.True {
		return types.False
	}
	mine := map[string]ref.Val{}
	for it := l.Iterator(); it.HasNext() == types.True; {
		v := it.Next()
		mine[l.key(v)] = v
	}
	seen := map[string]bool{}
	for it := o.Iterator(); it.HasNext() == types.True; {
		v := it.Next()
		k := l.key(v)
		m, ok := mine[k]
		if !ok {
			return types.False
		}
		if eq := m.Equal(v); eq != types.True {
			return eq
		}
		seen[k] = true
	}
	return types.Bool(len(seen) == len(mine))
}

// Add merges other into l by key.
func (l mapList) Add(other ref.Val) ref.Val {
	o, ok := other.(traits.Lister)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	out := listElements(l.Lister)
	index := make(map[string]int, len(out))
	for i, v := range out {
		index[l.key(v)] = i
	}
	for it := o.Iterator(); it.HasNext() == types.True; {
		v := it.Next()
		if i, ok := index[l.key(v)]; ok {
			out[i] = v
		} else {
			out = append(out, v)
		}
	}
	return mapList{Lister: types.NewRefValList(types.DefaultTypeAdapter, out), keys: l.keys}
}

// key is the identity of an item: the values of its key fields.
func (l mapList) key(v ref.Val) string {
	var b strings.Builder
	m, _ := v.(traits.Mapper)
	for _, k := range l.keys {
		if m == nil {
			b.WriteString("-\x00")
			continue
		}
		kv, ok := m.Find(types.String(k))
		if !ok {
			b.WriteString("-\x00")
			continue
		}
		fmt.Fprintf(&b, "%T:%v\x00", kv.Value(), kv.Value())
	}
	return b.String()
}

func listElements(l traits.Lister) []ref.Val {
	n, _ := l.Size().(types.Int)
	out := make([]ref.Val, 0, int(n))
	for it := l.Iterator(); it.HasNext() == types.True; {
		out = append(out, it.Next())
	}
	return out
}
