package cel

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

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
