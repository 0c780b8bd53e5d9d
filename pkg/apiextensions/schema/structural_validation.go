package schema

import (
	"fmt"
	"reflect"
	"regexp"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// level is where a schema node sits, which decides the wording of a
// missing type.
type level int

const (
	rootLevel level = iota
	itemLevel
	fieldLevel
)

// ValidateStructural returns the reasons s is not a structural schema, as
// kube-apiserver reports them for a CRD version's openAPIV3Schema at
// fldPath: every node has a type (or is int-or-string or preserves unknown
// fields), arrays have items, allOf/anyOf/oneOf/not only validate values and
// only name fields specified outside of them, the x-kubernetes-* extensions
// are used consistently, and metadata is not restricted beyond name and
// generateName at the root nor specified in nested contexts. The errors
// are sorted by their message, as Kubernetes sorts them.
//
// When s uses a feature a structural schema cannot have at all ($ref,
// definitions, ...), the result is the single error kube-apiserver gives
// for that; it shows that error only when ValidateSchema (which names the
// feature) reports nothing, and callers should do the same.
func ValidateStructural(fldPath *field.Path, s *apiextensionsv1.JSONSchemaProps) field.ErrorList {
	if s == nil {
		return nil
	}
	if _, err := NewStructural(s); err != nil {
		return field.ErrorList{field.Invalid(fldPath, "", err.Error())}
	}
	errs := structuralInvariants(s, rootLevel, fldPath)
	// Kubernetes checks completeness for the junctors of the root only.
	errs = append(errs, junctorCompleteness(s, s, fldPath, fldPath)...)
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errs
}

func structuralInvariants(s *apiextensionsv1.JSONSchemaProps, lvl level, fldPath *field.Path) field.ErrorList {
	if s == nil {
		return nil
	}
	var errs field.ErrorList
	var items *apiextensionsv1.JSONSchemaProps
	if s.Items != nil {
		items = s.Items.Schema
	}
	if s.Type == "array" && items == nil {
		errs = append(errs, field.Required(fldPath.Child("items"), "must be specified"))
	}
	errs = append(errs, structuralInvariants(items, itemLevel, fldPath.Child("items"))...)
	for _, k := range sortedPropertyNames(s.Properties) {
		p := s.Properties[k]
		errs = append(errs, structuralInvariants(&p, fieldLevel, fldPath.Child("properties").Key(k))...)
	}
	if s.AdditionalProperties != nil {
		if lvl == rootLevel {
			errs = append(errs, field.Forbidden(fldPath.Child("additionalProperties"), "must not be used at the root"))
		}
		errs = append(errs, structuralInvariants(s.AdditionalProperties.Schema, fieldLevel, fldPath.Child("additionalProperties"))...)
	}

	preserve := s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields
	if s.XIntOrString && preserve {
		errs = append(errs, field.Invalid(fldPath.Child("x-kubernetes-preserve-unknown-fields"), true, "must be false if x-kubernetes-int-or-string is true"))
	}
	if s.XIntOrString && s.XEmbeddedResource {
		errs = append(errs, field.Invalid(fldPath.Child("x-kubernetes-embedded-resource"), true, "must be false if x-kubernetes-int-or-string is true"))
	}

	errs = append(errs, junctorInvariants(s, isIntOrStringAnyOf(s.AnyOf), isIntOrStringAllOf(s.AllOf), lvl, fldPath)...)

	checkMetadata := lvl == rootLevel || s.XEmbeddedResource
	if s.XEmbeddedResource && s.Type != "object" {
		if s.Type == "" {
			errs = append(errs, field.Required(fldPath.Child("type"), "must be object if x-kubernetes-embedded-resource is true"))
		} else {
			errs = append(errs, field.Invalid(fldPath.Child("type"), s.Type, "must be object if x-kubernetes-embedded-resource is true"))
		}
	} else if s.Type == "" && !s.XIntOrString && !preserve {
		switch lvl {
		case rootLevel:
			errs = append(errs, field.Required(fldPath.Child("type"), "must not be empty at the root"))
		case itemLevel:
			errs = append(errs, field.Required(fldPath.Child("type"), "must not be empty for specified array items"))
		case fieldLevel:
			errs = append(errs, field.Required(fldPath.Child("type"), "must not be empty for specified object fields"))
		}
	}
	if s.XEmbeddedResource && s.AdditionalProperties != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("additionalProperties"), "must not be used if x-kubernetes-embedded-resource is set"))
	}
	if lvl == rootLevel && s.Type != "" && s.Type != "object" {
		errs = append(errs, field.Invalid(fldPath.Child("type"), s.Type, "must be object at the root"))
	}
	if checkMetadata {
		for _, k := range []string{"kind", "apiVersion"} {
			if p, found := s.Properties[k]; found && p.Type != "string" {
				errs = append(errs, field.Invalid(fldPath.Child("properties").Key(k).Child("type"), p.Type, "must be string"))
			}
		}
	}
	if m, found := s.Properties["metadata"]; found {
		errs = append(errs, metadataInvariants(&m, checkMetadata, lvl, fldPath.Child("properties").Key("metadata"))...)
	}
	if s.XEmbeddedResource && !preserve && len(s.Properties) == 0 {
		errs = append(errs, field.Required(fldPath.Child("properties"), "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"))
	}
	return errs
}

// metadataInvariants checks the schema of a metadata field: an object
// wherever metadata is a resource's, and at the root restricting nothing
// but name and generateName (the registry owns the rest of ObjectMeta).
func metadataInvariants(m *apiextensionsv1.JSONSchemaProps, checkMetadata bool, lvl level, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if checkMetadata && m.Type != "object" {
		errs = append(errs, field.Invalid(fldPath.Child("type"), m.Type, "must be object"))
	}
	if lvl != rootLevel {
		return errs
	}
	rest := *m
	_, name := rest.Properties["name"]
	_, generateName := rest.Properties["generateName"]
	if (name && generateName && len(rest.Properties) == 2) || ((name || generateName) && len(rest.Properties) == 1) {
		rest.Properties = nil
	}
	rest.Type = ""
	rest.Default = nil // ValidateSchema reports defaults in metadata
	// The structural form does not keep empty enums and junctor lists.
	if len(rest.Enum) == 0 {
		rest.Enum = nil
	}
	if len(rest.AllOf) == 0 {
		rest.AllOf = nil
	}
	if len(rest.AnyOf) == 0 {
		rest.AnyOf = nil
	}
	if len(rest.OneOf) == 0 {
		rest.OneOf = nil
	}
	if len(rest.XValidations) == 0 {
		rest.XValidations = nil
	}
	if !reflect.DeepEqual(rest, apiextensionsv1.JSONSchemaProps{}) {
		errs = append(errs, field.Forbidden(fldPath, "must not specify anything other than name and generateName, but metadata is implicitly specified"))
	}
	return errs
}

var (
	integerOnly = apiextensionsv1.JSONSchemaProps{Type: "integer"}
	stringOnly  = apiextensionsv1.JSONSchemaProps{Type: "string"}
)

// isIntOrStringAnyOf recognises `anyOf: [{type: integer}, {type: string}]`,
// the one place a junctor may carry types (for int-or-string).
func isIntOrStringAnyOf(anyOf []apiextensionsv1.JSONSchemaProps) bool {
	return len(anyOf) == 2 && reflect.DeepEqual(anyOf[0], integerOnly) && reflect.DeepEqual(anyOf[1], stringOnly)
}

// isIntOrStringAllOf recognises an allOf whose first entry is the
// int-or-string anyOf.
func isIntOrStringAllOf(allOf []apiextensionsv1.JSONSchemaProps) bool {
	return len(allOf) >= 1 && isIntOrStringAnyOf(allOf[0].AnyOf)
}

// junctorInvariants checks the allOf, anyOf, oneOf and not of s, which
// must only validate values, and that s.pattern compiles.
func junctorInvariants(s *apiextensionsv1.JSONSchemaProps, skipAnyOf, skipFirstAllOfAnyOf bool, lvl level, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !skipAnyOf {
		for i := range s.AnyOf {
			errs = append(errs, nestedInvariants(&s.AnyOf[i], false, false, lvl, fldPath.Child("anyOf").Index(i))...)
		}
	}
	for i := range s.AllOf {
		errs = append(errs, nestedInvariants(&s.AllOf[i], skipFirstAllOfAnyOf && i == 0, false, lvl, fldPath.Child("allOf").Index(i))...)
	}
	for i := range s.OneOf {
		errs = append(errs, nestedInvariants(&s.OneOf[i], false, false, lvl, fldPath.Child("oneOf").Index(i))...)
	}
	errs = append(errs, nestedInvariants(s.Not, false, false, lvl, fldPath.Child("not"))...)
	if s.Pattern != "" {
		if _, err := regexp.Compile(s.Pattern); err != nil {
			errs = append(errs, field.Invalid(fldPath.Child("pattern"), s.Pattern, fmt.Sprintf("must be a valid regular expression, but isn't: %v", err)))
		}
	}
	return errs
}

// nestedInvariants checks a schema inside a junctor: it may hold value
// validations only.
func nestedInvariants(v *apiextensionsv1.JSONSchemaProps, skipAnyOf, skipAllOfAnyOf bool, lvl level, fldPath *field.Path) field.ErrorList {
	if v == nil {
		return nil
	}
	errs := junctorInvariants(v, skipAnyOf, skipAllOfAnyOf, lvl, fldPath)
	if v.Items != nil {
		errs = append(errs, nestedInvariants(v.Items.Schema, false, false, lvl, fldPath.Child("items"))...)
	}
	for _, k := range sortedPropertyNames(v.Properties) {
		p := v.Properties[k]
		errs = append(errs, nestedInvariants(&p, false, false, fieldLevel, fldPath.Child("properties").Key(k))...)
	}
	if v.Type != "" {
		errs = append(errs, field.Forbidden(fldPath.Child("type"), "must be empty to be structural"))
	}
	if ap := v.AdditionalProperties; ap != nil && (ap.Schema != nil || ap.Allows) {
		errs = append(errs, field.Forbidden(fldPath.Child("additionalProperties"), "must be undefined to be structural"))
	}
	if d, _ := decodeJSON(v.Default); d != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("default"), "must be undefined to be structural"))
	}
	if v.Title != "" {
		errs = append(errs, field.Forbidden(fldPath.Child("title"), "must be empty to be structural"))
	}
	if v.Description != "" {
		errs = append(errs, field.Forbidden(fldPath.Child("description"), "must be empty to be structural"))
	}
	if v.Nullable {
		errs = append(errs, field.Forbidden(fldPath.Child("nullable"), "must be false to be structural"))
	}
	if v.XPreserveUnknownFields != nil && *v.XPreserveUnknownFields {
		errs = append(errs, field.Forbidden(fldPath.Child("x-kubernetes-preserve-unknown-fields"), "must be false to be structural"))
	}
	if v.XEmbeddedResource {
		errs = append(errs, field.Forbidden(fldPath.Child("x-kubernetes-embedded-resource"), "must be false to be structural"))
	}
	if v.XIntOrString {
		errs = append(errs, field.Forbidden(fldPath.Child("x-kubernetes-int-or-string"), "must be false to be structural"))
	}
	if len(v.XListMapKeys) > 0 {
		errs = append(errs, field.Forbidden(fldPath.Child("x-kubernetes-list-map-keys"), "must be empty to be structural"))
	}
	if v.XListType != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("x-kubernetes-list-type"), "must be undefined to be structural"))
	}
	if v.XMapType != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("x-kubernetes-map-type"), "must be undefined to be structural"))
	}
	if len(v.XValidations) > 0 {
		errs = append(errs, field.Forbidden(fldPath.Child("x-kubernetes-validations"), "must be empty to be structural"))
	}
	if _, found := v.Properties["metadata"]; found {
		errs = append(errs, field.Forbidden(fldPath.Child("properties").Key("metadata"), "must not be specified in a nested context"))
	}
	return errs
}

// junctorCompleteness checks that every property and items named inside
// the junctors of v is also specified by the structural node s.
func junctorCompleteness(v, s *apiextensionsv1.JSONSchemaProps, sPath, vPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, nestedCompleteness(v.Not, s, sPath, vPath.Child("not"))...)
	for i := range v.AllOf {
		errs = append(errs, nestedCompleteness(&v.AllOf[i], s, sPath, vPath.Child("allOf").Index(i))...)
	}
	for i := range v.AnyOf {
		errs = append(errs, nestedCompleteness(&v.AnyOf[i], s, sPath, vPath.Child("anyOf").Index(i))...)
	}
	for i := range v.OneOf {
		errs = append(errs, nestedCompleteness(&v.OneOf[i], s, sPath, vPath.Child("oneOf").Index(i))...)
	}
	return errs
}

func nestedCompleteness(v, s *apiextensionsv1.JSONSchemaProps, sPath, vPath *field.Path) field.ErrorList {
	if v == nil {
		return nil
	}
	if s == nil {
		return field.ErrorList{field.Required(sPath, fmt.Sprintf("because it is defined in %s", vPath.String()))}
	}
	errs := junctorCompleteness(v, s, sPath, vPath)
	if v.Items != nil && v.Items.Schema != nil {
		var sItems *apiextensionsv1.JSONSchemaProps
		if s.Items != nil {
			sItems = s.Items.Schema
		}
		errs = append(errs, nestedCompleteness(v.Items.Schema, sItems, sPath.Child("items"), vPath.Child("items"))...)
	}
	for _, k := range sortedPropertyNames(v.Properties) {
		vp := v.Properties[k]
		sp, ok := s.Properties[k]
		if !ok {
			errs = append(errs, field.Required(sPath.Child("properties").Key(k), fmt.Sprintf("because it is defined in %s", vPath.Child("properties").Key(k))))
			continue
		}
		errs = append(errs, nestedCompleteness(&vp, &sp, sPath.Child("properties").Key(k), vPath.Child("properties").Key(k))...)
	}
	return errs
}

func sortedPropertyNames(m map[string]apiextensionsv1.JSONSchemaProps) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
