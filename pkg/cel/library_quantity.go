package cel

import (
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"k8s.io/apimachinery/pkg/api/resource"
)

// quantityLib: quantity(s), isQuantity(s), sign(q), and the methods
// isGreaterThan, isLessThan, compareTo, add, sub (a quantity or an int),
// asInteger, asApproximateFloat and isInteger.
var quantityLib = &library{name: "kubernetes.quantity", funcs: []cel.EnvOption{
	cel.Function("quantity", cel.Overload("string_to_quantity", []*cel.Type{cel.StringType}, QuantityType, cel.UnaryBinding(stringToQuantity))),
	cel.Function("isQuantity", cel.Overload("is_quantity_string", []*cel.Type{cel.StringType}, cel.BoolType, cel.UnaryBinding(isQuantity))),
	cel.Function("sign", cel.Overload("quantity_sign", []*cel.Type{QuantityType}, cel.IntType,
		cel.UnaryBinding(quantityFunc(func(q *resource.Quantity) ref.Val { return types.Int(q.Sign()) })))),
	cel.Function("isGreaterThan", cel.MemberOverload("quantity_is_greater_than", []*cel.Type{QuantityType, QuantityType}, cel.BoolType,
		cel.BinaryBinding(quantityPair(func(a, b *resource.Quantity) ref.Val { return types.Bool(a.Cmp(*b) == 1) })))),
	cel.Function("isLessThan", cel.MemberOverload("quantity_is_less_than", []*cel.Type{QuantityType, QuantityType}, cel.BoolType,
		cel.BinaryBinding(quantityPair(func(a, b *resource.Quantity) ref.Val { return types.Bool(a.Cmp(*b) == -1) })))),
	cel.Function("compareTo", cel.MemberOverload("quantity_compare_to", []*cel.Type{QuantityType, QuantityType}, cel.IntType,
		cel.BinaryBinding(quantityPair(func(a, b *resource.Quantity) ref.Val { return types.Int(a.Cmp(*b)) })))),
	cel.Function("asApproximateFloat", cel.MemberOverload("quantity_get_float", []*cel.Type{QuantityType}, cel.DoubleType,
		cel.UnaryBinding(quantityFunc(func(q *resource.Quantity) ref.Val { return types.Double(q.AsApproximateFloat64()) })))),
	cel.Function("asInteger", cel.MemberOverload("quantity_get_int", []*cel.Type{QuantityType}, cel.IntType,
		cel.UnaryBinding(quantityFunc(func(q *resource.Quantity) ref.Val {
			v, ok := q.AsInt64()
			if !ok {
				return types.NewErr("cannot convert value to integer")
			}
			return types.Int(v)
		})))),
	cel.Function("isInteger", cel.MemberOverload("quantity_is_integer", []*cel.Type{QuantityType}, cel.BoolType,
		cel.UnaryBinding(quantityFunc(func(q *resource.Quantity) ref.Val {
			_, ok := q.AsInt64()
			return types.Bool(ok)
		})))),
	cel.Function("add",
		cel.MemberOverload("quantity_add", []*cel.Type{QuantityType, QuantityType}, QuantityType,
			cel.BinaryBinding(quantityPair(func(a, b *resource.Quantity) ref.Val { return quantityArith(a, b, false) }))),
		cel.MemberOverload("quantity_add_int", []*cel.Type{QuantityType, cel.IntType}, QuantityType,
			cel.BinaryBinding(quantityInt(false)))),
	cel.Function("sub",
		cel.MemberOverload("quantity_sub", []*cel.Type{QuantityType, QuantityType}, QuantityType,
			cel.BinaryBinding(quantityPair(func(a, b *resource.Quantity) ref.Val { return quantityArith(a, b, true) }))),
		cel.MemberOverload("quantity_sub_int", []*cel.Type{QuantityType, cel.IntType}, QuantityType,
			cel.BinaryBinding(quantityInt(true)))),
}}

func stringToQuantity(v ref.Val) ref.Val {
	s, ok := v.Value().(string)
	if !ok {
		return types.MaybeNoSuchOverloadErr(v)
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return types.WrapErr(err)
	}
	return Quantity{Quantity: &q}
}

func isQuantity(v ref.Val) ref.Val {
	s, ok := v.Value().(string)
	if !ok {
		return types.MaybeNoSuchOverloadErr(v)
	}
	_, err := resource.ParseQuantity(s)
	return types.Bool(err == nil)
}

func quantityFunc(f func(*resource.Quantity) ref.Val) func(ref.Val) ref.Val {
	return func(v ref.Val) ref.Val {
		q, ok := v.Value().(*resource.Quantity)
		if !ok {
			return types.MaybeNoSuchOverloadErr(v)
		}
		return f(q)
	}
}

func quantityPair(f func(a, b *resource.Quantity) ref.Val) func(ref.Val, ref.Val) ref.Val {
	return func(av, bv ref.Val) ref.Val {
		a, ok := av.Value().(*resource.Quantity)
		if !ok {
			return types.MaybeNoSuchOverloadErr(av)
		}
		b, ok := bv.Value().(*resource.Quantity)
		if !ok {
			return types.MaybeNoSuchOverloadErr(bv)
		}
		return f(a, b)
	}
}

// quantityArith returns a+b or a-b without touching a.
func quantityArith(a, b *resource.Quantity, sub bool) ref.Val {
	r := a.DeepCopy()
	if sub {
		r.Sub(*b)
	} else {
		r.Add(*b)
	}
	return Quantity{Quantity: &r}
}

func quantityInt(sub bool) func(ref.Val, ref.Val) ref.Val {
	return func(av, bv ref.Val) ref.Val {
		a, ok := av.Value().(*resource.Quantity)
		if !ok {
			return types.MaybeNoSuchOverloadErr(av)
		}
		b, ok := bv.Value().(int64)
		if !ok {
			return types.MaybeNoSuchOverloadErr(bv)
		}
		return quantityArith(a, resource.NewQuantity(b, resource.DecimalExponent), sub)
	}
}
