package apiextensions

import (
	"context"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kplane/kplane/pkg/apiextensions/celrules"
	"github.com/kplane/kplane/pkg/apiextensions/schema"
)

// versionSchema is what a version's openAPIV3Schema does to its objects:
// pruning, defaulting and validation. It is immutable and safe for
// concurrent use.
type versionSchema struct {
	structural *schema.Structural
	validator  *schema.Validator
	// rules evaluates the x-kubernetes-validations; nil when there are none.
	rules *celrules.Validator
	// hasDefaults is set when the schema has a default anywhere.
	hasDefaults bool
}

func newVersionSchema(s *apiextensionsv1.JSONSchemaProps) (*versionSchema, error) {
	st, err := schema.NewStructural(s)
	if err != nil {
		return nil, err
	}
	v, err := schema.NewValidator(s)
	if err != nil {
		return nil, err
	}
	rules, err := celrules.NewValidator(s)
	if err != nil {
		return nil, err
	}
	return &versionSchema{structural: st, validator: v, rules: rules, hasDefaults: hasDefault(st)}, nil
}

func hasDefault(s *schema.Structural) bool {
	if s == nil {
		return false
	}
	if s.Default != nil || hasDefault(s.Items) {
		return true
	}
	if ap := s.AdditionalProperties; ap != nil && hasDefault(ap.Structural) {
		return true
	}
	for _, p := range s.Properties {
		if hasDefault(p) {
			return true
		}
	}
	return false
}

// prune drops the fields the schema does not know and returns their paths.
func (vs *versionSchema) prune(obj map[string]any) []string {
	return schema.Prune(obj, vs.structural, true)
}

// defaults sets the schema's defaults in obj.
func (vs *versionSchema) defaults(obj map[string]any) { schema.Default(obj, vs.structural) }

// validate checks obj (and, on update, its change from old) against the
// schema, then its validation rules. As in Kubernetes, rules are not run
// on an object with values of the wrong type, and on update a rule that
// does not use oldSelf and fails on a value the update left unchanged is
// not an error (validation ratcheting), so objects stay writable when
// their CRD's rules tighten.
func (vs *versionSchema) validate(obj, old map[string]any) field.ErrorList {
	errs := vs.validator.Validate(nil, obj)
	if vs.rules == nil {
		return errs
	}
	for _, e := range errs {
		if e.Type == field.ErrorTypeTypeInvalid {
			return append(errs, field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"))
		}
	}
	// Strategies are not handed the request's context; the rules' cost
	// budget bounds their time.
	ctx := context.Background()
	if old == nil {
		return append(errs, vs.rules.Validate(ctx, nil, obj, nil)...)
	}
	ruleErrs, _ := vs.rules.ValidateRatcheting(ctx, nil, obj, old)
	return append(errs, ruleErrs...)
}

// validateVersionSchema checks a version's openAPIV3Schema when a CRD is
// written: structural, using only what Kubernetes allows, and, with the
// status subresource, a root Kubernetes accepts.
func validateVersionSchema(s *apiextensionsv1.JSONSchemaProps, statusEnabled bool, fld *field.Path) field.ErrorList {
	errs := schema.ValidateSchema(fld, s)
	if statusEnabled {
		errs = append(errs, schema.ValidateRootForStatus(fld, s)...)
	}
	structural := schema.ValidateStructural(fld, s)
	if len(errs) == 0 || !onlyNotStructural(structural) {
		errs = append(errs, structural...)
	}
	if len(structural) == 0 {
		// Rules are typed by the structural schema.
		errs = append(errs, celrules.ValidateRules(fld, s)...)
	}
	if len(errs) == 0 {
		if _, err := schema.NewValidator(s); err != nil {
			errs = append(errs, field.Invalid(fld, "", "error building validator: "+err.Error()))
		}
	}
	return errs
}

// onlyNotStructural reports whether errs is the one error saying a schema
// cannot be made structural at all, which Kubernetes shows only when
// nothing more precise was found.
func onlyNotStructural(errs field.ErrorList) bool {
	return len(errs) == 1 && errs[0].Type == field.ErrorTypeInvalid && errs[0].BadValue == ""
}
