package schema

import (
	"encoding/json"
	"errors"
	"math"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	openapierrors "k8s.io/kube-openapi/pkg/validation/errors"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"
)

// Validator checks custom resources against one CRD version's schema, as
// kube-apiserver does on create and update: OpenAPI value validation,
// x-kubernetes-list-type set and map uniqueness, and the apiVersion, kind
// and metadata of embedded resources. The root metadata is not its
// business (the registry validates it).
//
// A Validator is immutable and safe for concurrent use.
type Validator struct {
	// structural shapes the list-type and embedded-resource checks.
	structural *Structural
	// values is kube-openapi's validator for the converted schema.
	values *validate.SchemaValidator
}

// NewValidator builds the Validator of schema s, which should have passed
// ValidateStructural and ValidateSchema. A nil s validates nothing.
func NewValidator(s *apiextensionsv1.JSONSchemaProps) (*Validator, error) {
	if s == nil {
		return &Validator{}, nil
	}
	ss, err := NewStructural(s)
	if err != nil {
		return nil, err
	}
	vs, err := newValueValidator(s, forCustomResources)
	if err != nil {
		return nil, err
	}
	return &Validator{structural: ss, values: vs}, nil
}

// newValueValidator converts s and builds kube-openapi's validator for it.
func newValueValidator(s *apiextensionsv1.JSONSchemaProps, mode openAPIMode) (*validate.SchemaValidator, error) {
	o, err := toOpenAPI(s, mode)
	if err != nil {
		return nil, err
	}
	if o == nil {
		o = &spec.Schema{}
	}
	sv := validate.NewSchemaValidator(o, nil, "", strfmt.Default)
	if sv == nil {
		return nil, errors.New("cannot build a validator for the schema")
	}
	return sv, nil
}

// Validate returns every way obj breaks the schema, with paths below
// fldPath (nil for a whole custom resource, as Kubernetes reports them).
// Errors come in Kubernetes' order: value validation, then embedded
// resources, then list-type uniqueness. Validate does not modify obj.
func (v *Validator) Validate(fldPath *field.Path, obj map[string]any) field.ErrorList {
	if v == nil || v.values == nil {
		return nil
	}
	if hasIntegralFloat(obj) {
		obj = integralFloatsToInt64(obj).(map[string]any)
	}
	errs := validateValues(fldPath, obj, v.values)
	errs = append(errs, validateEmbeddedResources(fldPath, obj, v.structural, false)...)
	errs = append(errs, validateListSetsAndMaps(fldPath, v.structural, obj)...)
	return errs
}

// validateValues runs kube-openapi's validator on value and converts its
// result to a field.ErrorList as kube-apiserver does.
func validateValues(fldPath *field.Path, value any, sv *validate.SchemaValidator) field.ErrorList {
	result := sv.Validate(value)
	if result.IsValid() {
		return nil
	}
	return openAPIResultToFieldErrors(fldPath, result)
}

// openAPIResultToFieldErrors maps kube-openapi's errors to field errors:
// the error's dotted name becomes one path step below fldPath, its code
// picks the field.ErrorType, and its message is kept as the detail.
func openAPIResultToFieldErrors(fldPath *field.Path, result *validate.Result) field.ErrorList {
	var errs field.ErrorList
	for _, err := range result.Errors {
		verr, ok := err.(*openapierrors.Validation)
		if !ok {
			errs = append(errs, field.Invalid(fldPath, "", err.Error()))
			continue
		}
		p := fldPath
		if verr.Name != "" && verr.Name != "." {
			p = p.Child(strings.TrimPrefix(verr.Name, "."))
		}
		var value any = ""
		if verr.Value != nil {
			value = verr.Value
		}
		switch verr.Code() {
		case openapierrors.RequiredFailCode:
			errs = append(errs, field.Required(p, ""))
		case openapierrors.EnumFailCode:
			values := []string{}
			for _, allowed := range verr.Values {
				if s, ok := allowed.(string); ok {
					values = append(values, s)
				} else {
					b, _ := json.Marshal(allowed)
					values = append(values, string(b))
				}
			}
			errs = append(errs, field.NotSupported(p, verr.Value, values))
		case openapierrors.TooLongFailCode:
			errs = append(errs, field.TooLong(p, "", int(int64Or(verr.Valid, -1))))
		case openapierrors.MaxItemsFailCode, openapierrors.TooManyPropertiesCode:
			errs = append(errs, field.TooMany(p, int(int64Or(verr.Value, -1)), int(int64Or(verr.Valid, -1))))
		case openapierrors.InvalidTypeCode:
			errs = append(errs, field.TypeInvalid(p, value, verr.Error()))
		default:
			errs = append(errs, field.Invalid(p, value, verr.Error()))
		}
	}
	return errs
}

// hasIntegralFloat reports whether x holds a float64 with an integral
// value, as encoding/json decodes every number.
func hasIntegralFloat(x any) bool {
	switch x := x.(type) {
	case map[string]any:
		for _, v := range x {
			if hasIntegralFloat(v) {
				return true
			}
		}
	case []any:
		for _, v := range x {
			if hasIntegralFloat(v) {
				return true
			}
		}
	case float64:
		_, ok := exactInt64(x)
		return ok
	}
	return false
}

// integralFloatsToInt64 copies x with integral float64s as int64, so that a
// value decoded by encoding/json validates (and reads in messages) like the
// same JSON decoded by kube-apiserver, which keeps integers as int64.
func integralFloatsToInt64(x any) any {
	switch x := x.(type) {
	case map[string]any:
		c := make(map[string]any, len(x))
		for k, v := range x {
			c[k] = integralFloatsToInt64(v)
		}
		return c
	case []any:
		c := make([]any, len(x))
		for i, v := range x {
			c[i] = integralFloatsToInt64(v)
		}
		return c
	case float64:
		if i, ok := exactInt64(x); ok {
			return i
		}
	}
	return x
}

// exactInt64 returns f as an int64 when that loses nothing.
func exactInt64(f float64) (int64, bool) {
	if f != math.Trunc(f) || f < -(1<<63) || f >= 1<<63 {
		return 0, false
	}
	return int64(f), true
}

func int64Or(v any, fallback int64) int64 {
	if i, ok := v.(int64); ok {
		return i
	}
	return fallback
}
