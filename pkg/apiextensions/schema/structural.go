package schema

import (
	"errors"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// Structural is the structural form of one CRD version's schema: the part of
// the OpenAPI schema that decides the shape of an object (which fields exist,
// which are preserved, what their defaults are), plus the value validations
// of the node. It mirrors kube-apiserver's structural schema.
//
// A Structural is built by NewStructural and must not be modified afterwards;
// it is then safe for concurrent use.
type Structural struct {
	// Type is the OpenAPI type: "object", "array", "string", "integer",
	// "number", "boolean", or "" (any type; with XIntOrString or
	// XPreserveUnknownFields).
	Type string
	// Properties are the specified fields of an object, by name.
	Properties map[string]*Structural
	// Items is the schema of every element of an array.
	Items *Structural
	// AdditionalProperties is the schema of every field of an object that is
	// not in Properties; nil means such fields are unknown.
	AdditionalProperties *StructuralOrBool

	// Default is the decoded default value (integral numbers as int64, others
	// as float64). nil means no default; a `default: null` is no default, as in
	// Kubernetes.
	Default any
	// Nullable allows null as the value.
	Nullable bool

	// XPreserveUnknownFields keeps fields the schema does not specify.
	XPreserveUnknownFields bool
	// XEmbeddedResource marks an object that is a Kubernetes object itself:
	// apiVersion, kind and metadata are kept and checked.
	XEmbeddedResource bool
	// XIntOrString allows an integer or a string.
	XIntOrString bool
	// XListType is "atomic", "set", "map" or "" (unset, meaning atomic).
	XListType string
	// XListMapKeys are the key fields of a list of type map.
	XListMapKeys []string
	// XMapType is "atomic", "granular" or "" (unset, meaning granular).
	XMapType string

	// ValueValidation holds the value validations of this node; never nil
	// for a Structural built by NewStructural.
	ValueValidation *ValueValidation

	// source is the schema node this was built from, for validating its
	// default; nil for a Structural not built by NewStructural.
	source *apiextensionsv1.JSONSchemaProps
}

// StructuralOrBool is additionalProperties: a schema, or true/false.
type StructuralOrBool struct {
	// Structural is the schema of additional fields; nil with Bool true
	// means any value is allowed (and kept).
	Structural *Structural
	// Bool is true when additional properties are allowed.
	Bool bool
}

// ValueValidation is the value-only part of a schema node; each field is
// the OpenAPI keyword of the same name. The junctors (allOf, anyOf, oneOf,
// not) are kept as written: they never shape pruning or defaulting, only
// validation.
type ValueValidation struct {
	Format           string
	Maximum          *float64
	ExclusiveMaximum bool
	Minimum          *float64
	ExclusiveMinimum bool
	MaxLength        *int64
	MinLength        *int64
	Pattern          string
	MaxItems         *int64
	MinItems         *int64
	UniqueItems      bool
	MultipleOf       *float64
	// Enum holds the decoded allowed values.
	Enum          []any
	MaxProperties *int64
	MinProperties *int64
	Required      []string
	AllOf         []apiextensionsv1.JSONSchemaProps
	AnyOf         []apiextensionsv1.JSONSchemaProps
	OneOf         []apiextensionsv1.JSONSchemaProps
	Not           *apiextensionsv1.JSONSchemaProps
}

// NewStructural converts s into its structural form. It fails on the
// features a structural schema cannot have (id, $schema, $ref,
// patternProperties, dependencies, additionalItems, definitions, an array
// of item schemas, x-kubernetes-preserve-unknown-fields: false) and on
// default or enum values that are not JSON. It does not check the rules of
// ValidateStructural; a nil s gives a nil Structural. The result shares
// slices and nested schemas with s, which must not change afterwards.
func NewStructural(s *apiextensionsv1.JSONSchemaProps) (*Structural, error) {
	if s == nil {
		return nil, nil
	}
	if err := checkUnsupportedFields(s); err != nil {
		return nil, err
	}
	ss := &Structural{
		Type:              s.Type,
		Nullable:          s.Nullable,
		XEmbeddedResource: s.XEmbeddedResource,
		XIntOrString:      s.XIntOrString,
		XListMapKeys:      s.XListMapKeys,
		source:            s,
	}
	if s.XPreserveUnknownFields != nil {
		if !*s.XPreserveUnknownFields {
			return nil, errors.New("internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined")
		}
		ss.XPreserveUnknownFields = true
	}
	if s.XListType != nil {
		ss.XListType = *s.XListType
	}
	if s.XMapType != nil {
		ss.XMapType = *s.XMapType
	}
	if s.Default != nil {
		v, err := decodeJSON(s.Default)
		if err != nil {
			return nil, fmt.Errorf("invalid default: %w", err)
		}
		ss.Default = v
	}
	vv, err := newValueValidation(s)
	if err != nil {
		return nil, err
	}
	ss.ValueValidation = vv

	if s.Items != nil {
		if len(s.Items.JSONSchemas) > 0 {
			return nil, errors.New("OpenAPIV3Schema 'items' must be a schema, but is an array")
		}
		if ss.Items, err = NewStructural(s.Items.Schema); err != nil {
			return nil, err
		}
	}
	if len(s.Properties) > 0 {
		ss.Properties = make(map[string]*Structural, len(s.Properties))
		for k := range s.Properties {
			p := s.Properties[k]
			if ss.Properties[k], err = NewStructural(&p); err != nil {
				return nil, err
			}
		}
	}
	if s.AdditionalProperties != nil {
		if s.AdditionalProperties.Schema != nil {
			ap, err := NewStructural(s.AdditionalProperties.Schema)
			if err != nil {
				return nil, err
			}
			ss.AdditionalProperties = &StructuralOrBool{Structural: ap, Bool: true}
		} else {
			ss.AdditionalProperties = &StructuralOrBool{Bool: s.AdditionalProperties.Allows}
		}
	}
	return ss, nil
}

func newValueValidation(s *apiextensionsv1.JSONSchemaProps) (*ValueValidation, error) {
	v := &ValueValidation{
		Format:           s.Format,
		Maximum:          s.Maximum,
		ExclusiveMaximum: s.ExclusiveMaximum,
		Minimum:          s.Minimum,
		ExclusiveMinimum: s.ExclusiveMinimum,
		MaxLength:        s.MaxLength,
		MinLength:        s.MinLength,
		Pattern:          s.Pattern,
		MaxItems:         s.MaxItems,
		MinItems:         s.MinItems,
		UniqueItems:      s.UniqueItems,
		MultipleOf:       s.MultipleOf,
		MaxProperties:    s.MaxProperties,
		MinProperties:    s.MinProperties,
		Required:         s.Required,
		AllOf:            s.AllOf,
		AnyOf:            s.AnyOf,
		OneOf:            s.OneOf,
		Not:              s.Not,
	}
	for i := range s.Enum {
		e, err := decodeJSON(&s.Enum[i])
		if err != nil {
			return nil, fmt.Errorf("invalid enum value: %w", err)
		}
		v.Enum = append(v.Enum, e)
	}
	// The junctors are not structural, but the unsupported fields must not
	// hide in them either.
	for _, js := range [][]apiextensionsv1.JSONSchemaProps{s.AllOf, s.AnyOf, s.OneOf} {
		for i := range js {
			if err := checkUnsupportedFieldsDeep(&js[i]); err != nil {
				return nil, err
			}
		}
	}
	if s.Not != nil {
		if err := checkUnsupportedFieldsDeep(s.Not); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// decodeJSON decodes a raw JSON value the way Kubernetes decodes CRD
// defaults and enums: integral numbers become int64.
func decodeJSON(j *apiextensionsv1.JSON) (any, error) {
	if j == nil || len(j.Raw) == 0 {
		return nil, nil
	}
	var v any
	if err := utiljson.Unmarshal(j.Raw, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// checkUnsupportedFields reports the first feature of s that a structural
// schema cannot represent, with Kubernetes' wording.
func checkUnsupportedFields(s *apiextensionsv1.JSONSchemaProps) error {
	switch {
	case len(s.ID) > 0:
		return errors.New("OpenAPIV3Schema 'id' is not supported")
	case len(s.Schema) > 0:
		return errors.New("OpenAPIV3Schema 'schema' is not supported")
	case s.Ref != nil && len(*s.Ref) > 0:
		return errors.New("OpenAPIV3Schema '$ref' is not supported")
	case len(s.PatternProperties) > 0:
		return errors.New("OpenAPIV3Schema 'patternProperties' is not supported")
	case len(s.Dependencies) > 0:
		return errors.New("OpenAPIV3Schema 'dependencies' is not supported")
	case s.AdditionalItems != nil:
		return errors.New("OpenAPIV3Schema 'additionalItems' is not supported")
	case len(s.Definitions) > 0:
		return errors.New("OpenAPIV3Schema 'definitions' is not supported")
	}
	return nil
}

// checkUnsupportedFieldsDeep is checkUnsupportedFields for a value-only
// subtree (inside a junctor), which NewStructural does not otherwise walk.
func checkUnsupportedFieldsDeep(s *apiextensionsv1.JSONSchemaProps) error {
	var err error
	walkSchema(s, func(n *apiextensionsv1.JSONSchemaProps) bool {
		if err == nil {
			err = checkUnsupportedFields(n)
			if err == nil && n.Items != nil && len(n.Items.JSONSchemas) > 0 {
				err = errors.New("OpenAPIV3Schema 'items' must be a schema, but is an array")
			}
			if err == nil && n.XPreserveUnknownFields != nil && !*n.XPreserveUnknownFields {
				err = errors.New("internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined")
			}
		}
		return err == nil
	})
	return err
}

// walkSchema calls visit on s and every schema nested in it, depth first,
// until visit returns false.
func walkSchema(s *apiextensionsv1.JSONSchemaProps, visit func(*apiextensionsv1.JSONSchemaProps) bool) bool {
	if s == nil {
		return true
	}
	if !visit(s) {
		return false
	}
	for _, k := range sortedPropertyNames(s.Properties) {
		p := s.Properties[k]
		if !walkSchema(&p, visit) {
			return false
		}
	}
	if s.Items != nil {
		if !walkSchema(s.Items.Schema, visit) {
			return false
		}
		for i := range s.Items.JSONSchemas {
			if !walkSchema(&s.Items.JSONSchemas[i], visit) {
				return false
			}
		}
	}
	if s.AdditionalProperties != nil && !walkSchema(s.AdditionalProperties.Schema, visit) {
		return false
	}
	for _, js := range [][]apiextensionsv1.JSONSchemaProps{s.AllOf, s.AnyOf, s.OneOf} {
		for i := range js {
			if !walkSchema(&js[i], visit) {
				return false
			}
		}
	}
	return walkSchema(s.Not, visit)
}
