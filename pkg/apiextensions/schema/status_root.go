package schema

import (
	"fmt"
	"reflect"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// allowedWithStatus are the root schema fields kube-apiserver allows when a
// version has the status subresource: those that keep their meaning when
// status is validated on its own as properties[status].
var allowedWithStatus = []string{"Description", "Type", "Format", "Title", "Maximum", "ExclusiveMaximum", "Minimum", "ExclusiveMinimum", "MaxLength", "MinLength", "Pattern", "MaxItems", "MinItems", "UniqueItems", "MultipleOf", "Required", "Items", "Properties", "ExternalDocs", "Example", "XPreserveUnknownFields", "XValidations"}

// ValidateRootForStatus returns kube-apiserver's extra checks on the root of
// the openAPIV3Schema s (at fldPath) of a version whose status subresource
// is enabled: the root type must be object and only the fields in the
// detail may be set. It reports the first offending field only, as
// Kubernetes does; the invalid value shown for a disallowed field is s in
// its v1 JSON form (Kubernetes prints its internal form).
func ValidateRootForStatus(fldPath *field.Path, s *apiextensionsv1.JSONSchemaProps) field.ErrorList {
	if s == nil {
		return nil
	}
	v := reflect.ValueOf(s).Elem()
	for i := 0; i < v.NumField(); i++ {
		if v.Field(i).IsZero() {
			continue
		}
		name := v.Type().Field(i).Name
		if name == "Type" {
			if s.Type != "object" {
				return field.ErrorList{field.Invalid(fldPath.Child("type"), s.Type, `only "object" is allowed as the type at the root of the schema if the status subresource is enabled`)}
			}
			continue
		}
		if !contains(allowedWithStatus, name) {
			return field.ErrorList{field.Invalid(fldPath, *s, fmt.Sprintf("only %v fields are allowed at the root of the schema if the status subresource is enabled", allowedWithStatus))}
		}
	}
	return nil
}
