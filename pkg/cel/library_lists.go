package cel

import (
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// listsLib: <list>.isSorted(), sum(), min(), max(), indexOf(x), lastIndexOf(x).
// sum is declared for the types with a zero and an addition, the others for
// the types CEL can order.
var listsLib = &library{name: "kubernetes.lists", funcs: listsFuncs()}

type namedType struct {
	name string
	t    *cel.Type
}

var (
	summable = []namedType{
		{"int", cel.IntType}, {"uint", cel.UintType}, {"double", cel.DoubleType}, {"duration", cel.DurationType},
	}
	orderable = []namedType{
		{"int", cel.IntType}, {"uint", cel.UintType}, {"double", cel.DoubleType}, {"bool", cel.BoolType},
		{"duration", cel.DurationType}, {"timestamp", cel.TimestampType}, {"string", cel.StringType}, {"bytes", cel.BytesType},
	}
	zeroes = map[string]ref.Val{
		"int": types.Int(0), "uint": types.Uint(0), "double": types.Double(0), "duration": types.Duration{},
	}
)

func listsFuncs() []cel.EnvOption {
	var isSorted, sum, maxs, mins []cel.FunctionOpt
	for _, nt := range orderable {
		lt := []*cel.Type{cel.ListType(nt.t)}
		isSorted = append(isSorted, cel.MemberOverload("list_"+nt.name+"_is_sorted_bool", lt, cel.BoolType, cel.UnaryBinding(listIsSorted)))
		maxs = append(maxs, cel.MemberOverload("list_"+nt.name+"_max_"+nt.name, lt, nt.t, cel.UnaryBinding(listExtreme("max", 1))))
		mins = append(mins, cel.MemberOverload("list_"+nt.name+"_min_"+nt.name, lt, nt.t, cel.UnaryBinding(listExtreme("min", -1))))
	}
	for _, nt := range summable {
		zero := zeroes[nt.name]
		sum = append(sum, cel.MemberOverload("list_"+nt.name+"_sum_"+nt.name, []*cel.Type{cel.ListType(nt.t)}, nt.t,
			cel.UnaryBinding(func(l ref.Val) ref.Val { return listSum(l, zero) })))
	}
	a := cel.TypeParamType("A")
	return []cel.EnvOption{
		cel.Function("isSorted", isSorted...),
		cel.Function("sum", sum...),
		cel.Function("max", maxs...),
		cel.Function("min", mins...),
		cel.Function("indexOf", cel.MemberOverload("list_a_index_of_int", []*cel.Type{cel.ListType(a), a}, cel.IntType,
			cel.BinaryBinding(func(l, x ref.Val) ref.Val { return listIndexOf(l, x, false) }))),
		cel.Function("lastIndexOf", cel.MemberOverload("list_a_last_index_of_int", []*cel.Type{cel.ListType(a), a}, cel.IntType,
			cel.BinaryBinding(func(l, x ref.Val) ref.Val { return listIndexOf(l, x, true) }))),
	}
}

func listIsSorted(val ref.Val) ref.Val {
	l, ok := val.(traits.Lister)
	if !ok {
		return types.MaybeNoSuchOverloadErr(val)
	}
	var prev traits.Comparer
	for it := l.Iterator(); it.HasNext() == types.True; {
		next := it.Next()
		c, ok := next.(traits.Comparer)
		if !ok {
			return types.MaybeNoSuchOverloadErr(next)
		}
		if prev != nil {
			cmp := prev.Compare(next)
			if types.IsError(cmp) {
				return cmp
			}
			if cmp == types.IntOne {
				return types.False
			}
		}
		prev = c
	}
	return types.True
}

func listSum(val, zero ref.Val) ref.Val {
	l, ok := val.(traits.Lister)
	if !ok {
		return types.MaybeNoSuchOverloadErr(val)
	}
	acc := zero
	for it := l.Iterator(); it.HasNext() == types.True; {
		next := it.Next()
		adder, ok := acc.(traits.Adder)
		if !ok {
			return types.MaybeNoSuchOverloadErr(acc)
		}
		acc = adder.Add(next)
		if types.IsError(acc) {
			return acc
		}
	}
	return acc
}

// listExtreme returns the function finding the element that compares as want
// (1 for max, -1 for min) against all others; the first wins ties.
func listExtreme(name string, want types.Int) func(ref.Val) ref.Val {
	return func(val ref.Val) ref.Val {
		l, ok := val.(traits.Lister)
		if !ok {
			return types.MaybeNoSuchOverloadErr(val)
		}
		var best ref.Val
		for it := l.Iterator(); it.HasNext() == types.True; {
			next := it.Next()
			if best == nil {
				if _, ok := next.(traits.Comparer); !ok {
					return types.MaybeNoSuchOverloadErr(next)
				}
				best = next
				continue
			}
			c, ok := next.(traits.Comparer)
			if !ok {
				return types.MaybeNoSuchOverloadErr(next)
			}
			cmp := c.Compare(best)
			if types.IsError(cmp) {
				return cmp
			}
			if cmp == want {
				best = next
			}
		}
		if best == nil {
			return types.NewErr("%s called on empty list", name)
		}
		return best
	}
}

func listIndexOf(val, x ref.Val, last bool) ref.Val {
	l, ok := val.(traits.Lister)
	if !ok {
		return types.MaybeNoSuchOverloadErr(val)
	}
	n, ok := l.Size().(types.Int)
	if !ok {
		return types.MaybeNoSuchOverloadErr(val)
	}
	found := types.Int(-1)
	for i := types.Int(0); i < n; i++ {
		eq := l.Get(i).Equal(x)
		if types.IsError(eq) {
			return eq
		}
		if eq == types.True {
			found = i
			if !last {
				break
			}
		}
	}
	return found
}
