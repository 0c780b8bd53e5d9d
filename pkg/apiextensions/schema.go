package apiextensions

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kplane/kplane/pkg/apiextensions/schema"
)

// versionSchema is what a version's openAPIV3Schema does to its objects:
// pruning, defaulting and validation. It is immutable and safe for
// concurrent use.
type versionSchema struct {
	structural *schema.Structural
	validator  *schema.Validator
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
	return &versionSchema{structural: st, validator: v, hasDefaults: hasDefault(st)}, nil
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

// validate checks obj (and, on update, its change from old).
func (vs *versionSchema) validate(obj, old map[string]any) field.ErrorList {
	return vs.validator.Validate(nil, obj)
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
