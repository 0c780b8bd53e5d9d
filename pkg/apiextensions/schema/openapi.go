package schema

import (
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// openAPIMode selects how a CRD schema becomes a kube-openapi schema.
type openAPIMode int

const (
	// forCustomResources is the conversion kube-apiserver does before it
	// validates custom resources: int-or-string becomes type
	// [integer,string] and formats it does not support are dropped.
	forCustomResources openAPIMode = iota
	// forDefaults is the faithful conversion kube-apiserver validates
	// default values with: types and formats exactly as written.
	forDefaults
)

// supportedStringFormats are the string formats kube-apiserver validates
// (with go-openapi's normalisation: dashes removed). Others are ignored at
// run time and give a warning when the CRD is written.
var supportedStringFormats = map[string]bool{
	"bsonobjectid": true, "uri": true, "email": true, "hostname": true,
	"ipv4": true, "ipv6": true, "cidr": true, "mac": true,
	"uuid": true, "uuid3": true, "uuid4": true, "uuid5": true,
	"isbn": true, "isbn10": true, "isbn13": true, "creditcard": true,
	"ssn": true, "hexcolor": true, "rgbcolor": true, "byte": true,
	"password": true, "date": true, "duration": true, "datetime": true,
	"k8sshortname": true, "k8slongname": true,
}

// formatSupported reports whether kube-apiserver validates format for a
// node of type typ.
func formatSupported(typ, format string) bool {
	switch typ {
	case "", "string":
		return supportedStringFormats[strings.ReplaceAll(format, "-", "")]
	case "integer":
		return format == "int32" || format == "int64"
	case "number":
		return format == "float" || format == "double"
	}
	return false
}

// toOpenAPI converts a CRD schema into a kube-openapi schema. It converts
// every field, also those a CRD may not use, so that a schema that failed
// validation still gives the validator Kubernetes would build.
func toOpenAPI(in *apiextensionsv1.JSONSchemaProps, mode openAPIMode) (*spec.Schema, error) {
	if in == nil {
		return nil, nil
	}
	out := &spec.Schema{}
	out.ID = in.ID
	out.Schema = spec.SchemaURL(in.Schema)
	out.Description = in.Description
	out.Title = in.Title
	if in.Type != "" {
		out.Type = spec.StringOrArray{in.Type}
	}
	if in.XIntOrString && mode == forCustomResources {
		out.Type = spec.StringOrArray{"integer", "string"}
	}
	out.Nullable = in.Nullable
	out.Format = in.Format
	out.Maximum = in.Maximum
	out.ExclusiveMaximum = in.ExclusiveMaximum
	out.Minimum = in.Minimum
	out.ExclusiveMinimum = in.ExclusiveMinimum
	out.MaxLength = in.MaxLength
	out.MinLength = in.MinLength
	out.Pattern = in.Pattern
	out.MaxItems = in.MaxItems
	out.MinItems = in.MinItems
	out.UniqueItems = in.UniqueItems
	out.MultipleOf = in.MultipleOf
	out.MaxProperties = in.MaxProperties
	out.MinProperties = in.MinProperties
	out.Required = in.Required

	var err error
	if out.Default, err = decodeJSON(in.Default); err != nil {
		return nil, fmt.Errorf("invalid default: %w", err)
	}
	if out.Example, err = decodeJSON(in.Example); err != nil {
		return nil, fmt.Errorf("invalid example: %w", err)
	}
	if in.Enum != nil {
		out.Enum = make([]any, len(in.Enum))
		for i := range in.Enum {
			if out.Enum[i], err = decodeJSON(&in.Enum[i]); err != nil {
				return nil, fmt.Errorf("invalid enum value: %w", err)
			}
		}
	}

	if out.AllOf, err = toOpenAPISlice(in.AllOf, mode); err != nil {
		return nil, err
	}
	if out.OneOf, err = toOpenAPISlice(in.OneOf, mode); err != nil {
		return nil, err
	}
	if out.AnyOf, err = toOpenAPISlice(in.AnyOf, mode); err != nil {
		return nil, err
	}
	if out.Not, err = toOpenAPI(in.Not, mode); err != nil {
		return nil, err
	}
	if out.Properties, err = toOpenAPIMap(in.Properties, mode); err != nil {
		return nil, err
	}
	if out.PatternProperties, err = toOpenAPIMap(in.PatternProperties, mode); err != nil {
		return nil, err
	}
	if out.Definitions, err = toOpenAPIMap(in.Definitions, mode); err != nil {
		return nil, err
	}
	if in.Ref != nil {
		if out.Ref, err = spec.NewRef(*in.Ref); err != nil {
			return nil, err
		}
	}
	if in.AdditionalProperties != nil {
		out.AdditionalProperties = &spec.SchemaOrBool{Allows: in.AdditionalProperties.Allows}
		if out.AdditionalProperties.Schema, err = toOpenAPI(in.AdditionalProperties.Schema, mode); err != nil {
			return nil, err
		}
	}
	if in.AdditionalItems != nil {
		out.AdditionalItems = &spec.SchemaOrBool{Allows: in.AdditionalItems.Allows}
		if out.AdditionalItems.Schema, err = toOpenAPI(in.AdditionalItems.Schema, mode); err != nil {
			return nil, err
		}
	}
	if in.Items != nil {
		out.Items = &spec.SchemaOrArray{}
		if out.Items.Schema, err = toOpenAPI(in.Items.Schema, mode); err != nil {
			return nil, err
		}
		if in.Items.JSONSchemas != nil {
			if out.Items.Schemas, err = toOpenAPISlice(in.Items.JSONSchemas, mode); err != nil {
				return nil, err
			}
		}
	}
	if in.Dependencies != nil {
		out.Dependencies = make(spec.Dependencies, len(in.Dependencies))
		for k, d := range in.Dependencies {
			dep := spec.SchemaOrStringArray{Property: d.Property}
			if dep.Schema, err = toOpenAPI(d.Schema, mode); err != nil {
				return nil, err
			}
			out.Dependencies[k] = dep
		}
	}
	if in.ExternalDocs != nil {
		out.ExternalDocs = &spec.ExternalDocumentation{Description: in.ExternalDocs.Description, URL: in.ExternalDocs.URL}
	}

	// Kubernetes strips the formats it does not support from the converted
	// node, so an int-or-string node checks its format like a string one.
	if mode == forCustomResources && out.Format != "" {
		typ := "" // as in Kubernetes, several types check like a string
		if len(out.Type) == 1 {
			typ = out.Type[0]
		}
		if !formatSupported(typ, out.Format) {
			out.Format = ""
		}
	}

	if in.XIntOrString {
		out.AddExtension("x-kubernetes-int-or-string", true)
	}
	if in.XPreserveUnknownFields != nil {
		out.AddExtension("x-kubernetes-preserve-unknown-fields", *in.XPreserveUnknownFields)
	}
	if in.XEmbeddedResource {
		out.AddExtension("x-kubernetes-embedded-resource", true)
	}
	if len(in.XListMapKeys) != 0 {
		keys := make([]any, len(in.XListMapKeys))
		for i, k := range in.XListMapKeys {
			keys[i] = k
		}
		out.AddExtension("x-kubernetes-list-map-keys", keys)
	}
	if in.XListType != nil {
		out.AddExtension("x-kubernetes-list-type", *in.XListType)
	}
	if in.XMapType != nil {
		out.AddExtension("x-kubernetes-map-type", *in.XMapType)
	}
	return out, nil
}

func toOpenAPISlice(in []apiextensionsv1.JSONSchemaProps, mode openAPIMode) ([]spec.Schema, error) {
	if in == nil {
		return nil, nil
	}
	out := make([]spec.Schema, 0, len(in))
	for i := range in {
		s, err := toOpenAPI(&in[i], mode)
		if err != nil {
			return nil, err
		}
		out = append(out, *s)
	}
	return out, nil
}

func toOpenAPIMap(in map[string]apiextensionsv1.JSONSchemaProps, mode openAPIMode) (map[string]spec.Schema, error) {
	if in == nil {
		return nil, nil
	}
	out := make(map[string]spec.Schema, len(in))
	for k := range in {
		v := in[k]
		s, err := toOpenAPI(&v, mode)
		if err != nil {
			return nil, err
		}
		out[k] = *s
	}
	return out, nil
}
