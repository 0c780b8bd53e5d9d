package cel

import (
	"net/url"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
)

// formats are the named formats of the format library, by the name CEL
// expressions use: format.<name>() and format.named("<name>").
var formats = map[string]*Format{
	"dns1123Label":           {Name: "DNS1123Label", MaxRegexSize: 30, ValidateFunc: func(s string) []string { return apimachineryvalidation.NameIsDNSLabel(s, false) }},
	"dns1123Subdomain":       {Name: "DNS1123Subdomain", MaxRegexSize: 60, ValidateFunc: func(s string) []string { return apimachineryvalidation.NameIsDNSSubdomain(s, false) }},
	"dns1035Label":           {Name: "DNS1035Label", MaxRegexSize: 30, ValidateFunc: func(s string) []string { return apimachineryvalidation.NameIsDNS1035Label(s, false) }},
	"qualifiedName":          {Name: "QualifiedName", MaxRegexSize: 60, ValidateFunc: validation.IsQualifiedName},
	"dns1123LabelPrefix":     {Name: "DNS1123LabelPrefix", MaxRegexSize: 30, ValidateFunc: func(s string) []string { return apimachineryvalidation.NameIsDNSLabel(s, true) }},
	"dns1123SubdomainPrefix": {Name: "DNS1123SubdomainPrefix", MaxRegexSize: 60, ValidateFunc: func(s string) []string { return apimachineryvalidation.NameIsDNSSubdomain(s, true) }},
	"dns1035LabelPrefix":     {Name: "DNS1035LabelPrefix", MaxRegexSize: 30, ValidateFunc: func(s string) []string { return apimachineryvalidation.NameIsDNS1035Label(s, true) }},
	"labelValue":             {Name: "LabelValue", MaxRegexSize: 40, ValidateFunc: validation.IsValidLabelValue},
	"uri": {Name: "URI", MaxRegexSize: 1103, ValidateFunc: func(s string) []string {
		if _, err := url.ParseRequestURI(s); err != nil {
			return []string{err.Error()}
		}
		return nil
	}},
	"uuid":     {Name: "uuid", MaxRegexSize: len(strfmt.UUIDPattern), ValidateFunc: strfmtCheck("uuid", "does not match the UUID format")},
	"byte":     {Name: "byte", MaxRegexSize: 84, ValidateFunc: strfmtCheck("byte", "invalid base64")},
	"date":     {Name: "date", MaxRegexSize: len(strfmt.DateTimePattern), ValidateFunc: strfmtCheck("date", "invalid date")},
	"datetime": {Name: "datetime", MaxRegexSize: len(strfmt.DateTimePattern), ValidateFunc: strfmtCheck("datetime", "invalid datetime")},
}

// maxNameFormatRegexSize bounds MaxRegexSize over formats; it prices
// validate() when the format is not known statically.
const maxNameFormatRegexSize = 128

func strfmtCheck(name, msg string) func(string) []string {
	return func(s string) []string {
		if !strfmt.Default.Validates(name, s) {
			return []string{msg}
		}
		return nil
	}
}

// formatLib: format.<name>() for each of Formats, format.named(name) (an
// optional format), and <format>.validate(s), which is optional.none() when s
// is valid and otherwise the list of problems.
var formatLib = &library{name: "kubernetes.format", funcs: formatFuncs()}

func formatFuncs() []cel.EnvOption {
	opts := []cel.EnvOption{
		cel.Function("validate", cel.MemberOverload("format-validate", []*cel.Type{FormatType, cel.StringType},
			cel.OptionalType(cel.ListType(cel.StringType)), cel.BinaryBinding(formatValidate))),
		cel.Function("format.named", cel.Overload("format-named", []*cel.Type{cel.StringType}, cel.OptionalType(FormatType),
			cel.UnaryBinding(func(v ref.Val) ref.Val {
				s, ok := v.Value().(string)
				if !ok {
					return types.MaybeNoSuchOverloadErr(v)
				}
				f, ok := formats[s]
				if !ok {
					return types.OptionalNone
				}
				return types.OptionalOf(f)
			}))),
	}
	for name, f := range formats {
		fn := "format." + name
		opts = append(opts, cel.Function(fn, cel.Overload(fn, nil, FormatType,
			cel.FunctionBinding(func(...ref.Val) ref.Val { return f }))))
	}
	return opts
}

func formatValidate(fv, sv ref.Val) ref.Val {
	f, ok := fv.(*Format)
	if !ok {
		return types.MaybeNoSuchOverloadErr(fv)
	}
	s, ok := sv.Value().(string)
	if !ok {
		return types.MaybeNoSuchOverloadErr(sv)
	}
	if problems := f.ValidateFunc(s); len(problems) > 0 {
		return types.OptionalOf(types.NewStringList(types.DefaultTypeAdapter, problems))
	}
	return types.OptionalNone
}
