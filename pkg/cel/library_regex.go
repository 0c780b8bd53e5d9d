package cel

import (
	"regexp"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// regexLib: <string>.find(re) returns the first match or "";
// <string>.findAll(re[, limit]) returns the matches, at most limit of them
// when limit is not negative.
var regexLib = &library{name: "kubernetes.regex", funcs: []cel.EnvOption{
	cel.Function("find", cel.MemberOverload("string_find_string", []*cel.Type{cel.StringType, cel.StringType}, cel.StringType,
		cel.BinaryBinding(regexFind))),
	cel.Function("findAll",
		cel.MemberOverload("string_find_all_string", []*cel.Type{cel.StringType, cel.StringType}, cel.ListType(cel.StringType),
			cel.BinaryBinding(func(s, re ref.Val) ref.Val { return regexFindAll(s, re, types.Int(-1)) })),
		cel.MemberOverload("string_find_all_string_int", []*cel.Type{cel.StringType, cel.StringType, cel.IntType}, cel.ListType(cel.StringType),
			cel.FunctionBinding(func(args ...ref.Val) ref.Val { return regexFindAll(args[0], args[1], args[2]) }))),
}}

func compileRegex(v ref.Val) (*regexp.Regexp, ref.Val) {
	s, ok := v.Value().(string)
	if !ok {
		return nil, types.MaybeNoSuchOverloadErr(v)
	}
	re, err := regexp.Compile(s)
	if err != nil {
		return nil, types.NewErr("Illegal regex: %v", err.Error())
	}
	return re, nil
}

func regexFind(strVal, reVal ref.Val) ref.Val {
	s, ok := strVal.Value().(string)
	if !ok {
		return types.MaybeNoSuchOverloadErr(strVal)
	}
	re, errVal := compileRegex(reVal)
	if errVal != nil {
		return errVal
	}
	return types.String(re.FindString(s))
}

func regexFindAll(strVal, reVal, limitVal ref.Val) ref.Val {
	s, ok := strVal.Value().(string)
	if !ok {
		return types.MaybeNoSuchOverloadErr(strVal)
	}
	limit, ok := limitVal.(types.Int)
	if !ok {
		return types.MaybeNoSuchOverloadErr(limitVal)
	}
	re, errVal := compileRegex(reVal)
	if errVal != nil {
		return errVal
	}
	n := int(limit)
	if int64(n) != int64(limit) || n < 0 {
		n = -1
	}
	return types.NewStringList(types.DefaultTypeAdapter, re.FindAllString(s, n))
}
