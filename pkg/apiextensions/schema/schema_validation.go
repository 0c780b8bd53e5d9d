package schema

import (
	"fmt"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// openAPIV3Types are the values `type` may have.
var openAPIV3Types = []string{"array", "boolean", "integer", "number", "object", "string"}

// validationReasons are the values x-kubernetes-validations' reason may have.
var validationReasons = []string{"FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"}

// ValidateSchema returns what else, beyond ValidateStructural, kube-apiserver
// rejects in the openAPIV3Schema (at fldPath) of a CRD version created
// through apiextensions.k8s.io/v1: a nullable root; the features CRDs do
// not support ($ref, definitions, id, additionalItems, patternProperties,
// dependencies, type null, items as an array); uniqueItems; properties
// together with additionalProperties; x-kubernetes-list-type,
// -list-map-keys and -map-type values and the rules binding them;
// x-kubernetes-preserve-unknown-fields: false; embedded resources inside
// resource metadata; the static parts of x-kubernetes-validations rules
// (not their CEL); and defaults: forbidden in the root's apiVersion, kind
// and metadata and in additionalProperties applying to metadata, and
// elsewhere required to be pruned, to be valid metadata when inside an
// embedded resource's metadata, and to validate against their schema.
//
// As in Kubernetes, defaults are only checked once the schema is
// structural (ValidateStructural reports nothing). Unknown formats are not
// errors in Kubernetes but warnings; see Warnings.
func ValidateSchema(fldPath *field.Path, s *apiextensionsv1.JSONSchemaProps) field.ErrorList {
	if s == nil {
		return nil
	}
	var errs field.ErrorList
	if s.Nullable {
		errs = append(errs, field.Forbidden(fldPath.Child("nullable"), "nullable cannot be true at the root"))
	}
	if len(ValidateStructural(fldPath, s)) == 0 {
		if ss, err := NewStructural(s); err == nil {
			errs = append(errs, validateDefaults(fldPath, ss)...)
		}
	}
	v := schemaValidator{allowDefaults: true}
	errs = append(errs, v.validateTree(s, fldPath, true)...)
	return errs
}

// schemaValidator carries what the position in the schema allows.
type schemaValidator struct {
	allowDefaults bool
	// disallowDefaultsReason completes the message when defaults are not allowed.
	disallowDefaultsReason string
	// insideResourceMeta is true below apiVersion, kind or metadata of a
	// resource root or embedded resource.
	insideResourceMeta bool
}

func (v schemaValidator) withForbiddenDefaults(reason string) schemaValidator {
	v.allowDefaults = false
	v.disallowDefaultsReason = reason
	return v
}

func (v schemaValidator) withInsideResourceMeta() schemaValidator {
	v.insideResourceMeta = true
	return v
}

// validateTree checks s and every schema nested in it, in the order
// Kubernetes does.
func (v schemaValidator) validateTree(s *apiextensionsv1.JSONSchemaProps, fldPath *field.Path, isRoot bool) field.ErrorList {
	if s == nil {
		return nil
	}
	errs := v.validateNode(s, fldPath)

	if s.UniqueItems {
		errs = append(errs, field.Forbidden(fldPath.Child("uniqueItems"), "uniqueItems cannot be set to true since the runtime complexity becomes quadratic"))
	}
	if s.AdditionalProperties != nil {
		// Properties are for structs, additionalProperties for maps: both
		// at once would contradict ignoring unknown fields.
		if len(s.Properties) != 0 && (!s.AdditionalProperties.Allows || s.AdditionalProperties.Schema != nil) {
			errs = append(errs, field.Forbidden(fldPath.Child("additionalProperties"), "additionalProperties and properties are mutual exclusive"))
		}
		sub := v
		if v.insideResourceMeta {
			// Pruning a default without the actual key is ambiguous.
			sub = v.withForbiddenDefaults("inside additionalProperties applying to object metadata")
		}
		errs = append(errs, sub.validateTree(s.AdditionalProperties.Schema, fldPath.Child("additionalProperties"), false)...)
	}
	for _, k := range sortedPropertyNames(s.Properties) {
		p := s.Properties[k]
		sub := v
		if (isRoot || s.XEmbeddedResource) && metaFields[k] {
			sub = sub.withInsideResourceMeta()
			if isRoot {
				sub = sub.withForbiddenDefaults(fmt.Sprintf("in top-level %s", k))
			}
		}
		errs = append(errs, sub.validateTree(&p, fldPath.Child("properties").Key(k), false)...)
	}
	errs = append(errs, v.validateTree(s.Not, fldPath.Child("not"), false)...)
	for i := range s.AllOf {
		errs = append(errs, v.validateTree(&s.AllOf[i], fldPath.Child("allOf").Index(i), false)...)
	}
	for i := range s.OneOf {
		errs = append(errs, v.validateTree(&s.OneOf[i], fldPath.Child("oneOf").Index(i), false)...)
	}
	for i := range s.AnyOf {
		errs = append(errs, v.validateTree(&s.AnyOf[i], fldPath.Child("anyOf").Index(i), false)...)
	}
	for _, k := range sortedPropertyNames(s.Definitions) {
		d := s.Definitions[k]
		errs = append(errs, v.validateTree(&d, fldPath.Child("definitions").Key(k), false)...)
	}
	if s.Items != nil {
		errs = append(errs, v.validateTree(s.Items.Schema, fldPath.Child("items"), false)...)
		for i := range s.Items.JSONSchemas {
			errs = append(errs, v.validateTree(&s.Items.JSONSchemas[i], fldPath.Child("items").Index(i), false)...)
		}
	}
	for _, k := range sortedDependencyNames(s.Dependencies) {
		errs = append(errs, v.validateTree(s.Dependencies[k].Schema, fldPath.Child("dependencies").Key(k), false)...)
	}

	if s.XPreserveUnknownFields != nil && !*s.XPreserveUnknownFields {
		errs = append(errs, field.Invalid(fldPath.Child("x-kubernetes-preserve-unknown-fields"), false, "must be true or undefined"))
	}
	errs = append(errs, validateMapType(s, fldPath)...)
	errs = append(errs, validateListType(s, fldPath)...)
	errs = append(errs, validateRules(s, fldPath)...)
	return errs
}

// validateNode checks the features a CRD schema node may not use.
func (v schemaValidator) validateNode(s *apiextensionsv1.JSONSchemaProps, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Type != "" && !contains(openAPIV3Types, s.Type) {
		errs = append(errs, field.NotSupported(fldPath.Child("type"), s.Type, openAPIV3Types))
	}
	if s.Default != nil && !v.allowDefaults {
		detail := "must not be set"
		if v.disallowDefaultsReason != "" {
			detail += " " + v.disallowDefaultsReason
		}
		errs = append(errs, field.Forbidden(fldPath.Child("default"), detail))
	}
	if s.ID != "" {
		errs = append(errs, field.Forbidden(fldPath.Child("id"), "id is not supported"))
	}
	if s.AdditionalItems != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("additionalItems"), "additionalItems is not supported"))
	}
	if len(s.PatternProperties) != 0 {
		errs = append(errs, field.Forbidden(fldPath.Child("patternProperties"), "patternProperties is not supported"))
	}
	if len(s.Definitions) != 0 {
		errs = append(errs, field.Forbidden(fldPath.Child("definitions"), "definitions is not supported"))
	}
	if s.Dependencies != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("dependencies"), "dependencies is not supported"))
	}
	if s.Ref != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("$ref"), "$ref is not supported"))
	}
	if s.Type == "null" {
		errs = append(errs, field.Forbidden(fldPath.Child("type"), "type cannot be set to null, use nullable as an alternative"))
	}
	if s.Items != nil && len(s.Items.JSONSchemas) != 0 {
		errs = append(errs, field.Forbidden(fldPath.Child("items"), "items must be a schema object and not an array"))
	}
	if v.insideResourceMeta && s.XEmbeddedResource {
		errs = append(errs, field.Forbidden(fldPath.Child("x-kubernetes-embedded-resource"), "must not be used inside of resource meta"))
	}
	return errs
}

func validateMapType(s *apiextensionsv1.JSONSchemaProps, fldPath *field.Path) field.ErrorList {
	if s.XMapType == nil {
		return nil
	}
	var errs field.ErrorList
	if s.Type != "object" {
		if s.Type == "" {
			errs = append(errs, field.Required(fldPath.Child("type"), "must be object if x-kubernetes-map-type is specified"))
		} else {
			errs = append(errs, field.Invalid(fldPath.Child("type"), s.Type, "must be object if x-kubernetes-map-type is specified"))
		}
	}
	if *s.XMapType != "atomic" && *s.XMapType != "granular" {
		errs = append(errs, field.NotSupported(fldPath.Child("x-kubernetes-map-type"), *s.XMapType, []string{"atomic", "granular"}))
	}
	return errs
}

func validateListType(s *apiextensionsv1.JSONSchemaProps, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	var items *apiextensionsv1.JSONSchemaProps
	if s.Items != nil {
		items = s.Items.Schema
	}
	if s.XListType != nil && s.Type != "array" {
		if s.Type == "" {
			errs = append(errs, field.Required(fldPath.Child("type"), "must be array if x-kubernetes-list-type is specified"))
		} else {
			errs = append(errs, field.Invalid(fldPath.Child("type"), s.Type, "must be array if x-kubernetes-list-type is specified"))
		}
	} else if s.XListType != nil && *s.XListType == "set" && items != nil {
		// Set elements compare whole, so they must be atomic.
		switch items.Type {
		case "array":
			if items.XListType != nil && *items.XListType != "atomic" {
				errs = append(errs, field.Invalid(fldPath.Child("items").Child("x-kubernetes-list-type"), items.XListType, "must be atomic as item of a list with x-kubernetes-list-type=set"))
			}
		case "object":
			if items.XMapType == nil || *items.XMapType != "atomic" {
				// Kubernetes reports the items' list type here (nil for an object).
				errs = append(errs, field.Invalid(fldPath.Child("items").Child("x-kubernetes-map-type"), items.XListType, "must be atomic as item of a list with x-kubernetes-list-type=set"))
			}
		}
	}
	if s.XListType != nil && *s.XListType != "atomic" && *s.XListType != "set" && *s.XListType != "map" {
		errs = append(errs, field.NotSupported(fldPath.Child("x-kubernetes-list-type"), *s.XListType, []string{"atomic", "set", "map"}))
	}
	if len(s.XListMapKeys) > 0 {
		if s.XListType == nil {
			errs = append(errs, field.Required(fldPath.Child("x-kubernetes-list-type"), "must be map if x-kubernetes-list-map-keys is non-empty"))
		} else if *s.XListType != "map" {
			errs = append(errs, field.Invalid(fldPath.Child("x-kubernetes-list-type"), *s.XListType, "must be map if x-kubernetes-list-map-keys is non-empty"))
		}
	}
	if s.XListType != nil && *s.XListType == "map" {
		if len(s.XListMapKeys) == 0 {
			errs = append(errs, field.Required(fldPath.Child("x-kubernetes-list-map-keys"), "must not be empty if x-kubernetes-list-type is map"))
		}
		if s.Items == nil {
			errs = append(errs, field.Required(fldPath.Child("items"), "must have a schema if x-kubernetes-list-type is map"))
		}
		if s.Items != nil && items == nil {
			errs = append(errs, field.Invalid(fldPath.Child("items"), s.Items, "must only have a single schema if x-kubernetes-list-type is map"))
		}
		if items != nil && items.Type != "object" {
			errs = append(errs, field.Invalid(fldPath.Child("items").Child("type"), items.Type, "must be object if parent array's x-kubernetes-list-type is map"))
		}
		if items != nil && items.Type == "object" {
			seen := map[string]bool{}
			for _, k := range s.XListMapKeys {
				if p, ok := items.Properties[k]; ok {
					if p.Type == "array" || p.Type == "object" {
						// Kubernetes reports the items' type as the value.
						errs = append(errs, field.Invalid(fldPath.Child("items").Child("properties").Key(k).Child("type"), items.Type, "must be a scalar type if parent array's x-kubernetes-list-type is map"))
					}
				} else {
					errs = append(errs, field.Invalid(fldPath.Child("x-kubernetes-list-map-keys"), s.XListMapKeys, "entries must all be names of item properties"))
				}
				if seen[k] {
					errs = append(errs, field.Invalid(fldPath.Child("x-kubernetes-list-map-keys"), s.XListMapKeys, "must not contain duplicate entries"))
				}
				seen[k] = true
			}
		}
	}
	errs = append(errs, validateMapListKeys(s, items, fldPath)...)
	return errs
}

// validateMapListKeys checks that set and map elements are not nullable
// and that list-map keys are required or defaulted, and not nullable.
func validateMapListKeys(s, items *apiextensionsv1.JSONSchemaProps, fldPath *field.Path) field.ErrorList {
	if items == nil || s.XListType == nil || (*s.XListType != "set" && *s.XListType != "map") {
		return nil
	}
	var errs field.ErrorList
	if items.Nullable {
		errs = append(errs, field.Forbidden(fldPath.Child("items").Child("nullable"), "cannot be nullable when x-kubernetes-list-type is "+*s.XListType))
	}
	if *s.XListType != "map" {
		return errs
	}
	required := map[string]bool{}
	for _, r := range items.Required {
		required[r] = true
	}
	for _, k := range s.XListMapKeys {
		p, ok := items.Properties[k]
		if !ok {
			continue // reported above
		}
		if !required[k] && p.Default == nil {
			errs = append(errs, field.Required(fldPath.Child("items").Child("properties").Key(k).Child("default"), "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"))
		}
		if p.Nullable {
			errs = append(errs, field.Forbidden(fldPath.Child("items").Child("properties").Key(k).Child("nullable"), "this property is in x-kubernetes-list-map-keys, so it cannot be nullable"))
		}
	}
	return errs
}

// validateRules checks the parts of x-kubernetes-validations that need no
// CEL: rules and messages present and single-line, known reasons.
func validateRules(s *apiextensionsv1.JSONSchemaProps, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, rule := range s.XValidations {
		p := fldPath.Child("x-kubernetes-validations").Index(i)
		trimmedRule := strings.TrimSpace(rule.Rule)
		trimmedMsg := strings.TrimSpace(rule.Message)
		switch {
		case trimmedRule == "":
			errs = append(errs, field.Required(p.Child("rule"), "rule is not specified"))
		case rule.Message != "" && trimmedMsg == "":
			errs = append(errs, field.Invalid(p.Child("message"), rule.Message, "must be non-empty if specified"))
		case strings.Contains(trimmedMsg, "\n"):
			errs = append(errs, field.Invalid(p.Child("message"), rule.Message, "must not contain line breaks"))
		case strings.Contains(trimmedRule, "\n") && trimmedMsg == "":
			errs = append(errs, field.Required(p.Child("message"), "message must be specified if rule contains line breaks"))
		}
		if rule.MessageExpression != "" && strings.TrimSpace(rule.MessageExpression) == "" {
			errs = append(errs, field.Required(p.Child("messageExpression"), "messageExpression must be non-empty if specified"))
		}
		if rule.Reason != nil && !contains(validationReasons, string(*rule.Reason)) {
			errs = append(errs, field.NotSupported(p.Child("reason"), *rule.Reason, validationReasons))
		}
		if rule.FieldPath != "" && strings.TrimSpace(rule.FieldPath) == "" {
			errs = append(errs, field.Invalid(p.Child("fieldPath"), rule.FieldPath, "must be non-empty if specified"))
		}
		if strings.Contains(rule.FieldPath, "\n") {
			errs = append(errs, field.Invalid(p.Child("fieldPath"), rule.FieldPath, "must not contain line breaks"))
		}
	}
	return errs
}

// Warnings returns the warnings kube-apiserver gives when a CRD version
// with schema s is written: `unrecognized format "..."` for every format
// it does not validate, and one warning per kind of non-scalar set items.
func Warnings(s *apiextensionsv1.JSONSchemaProps) []string {
	var formats []string
	sets := map[string]bool{}
	walkSchema(s, func(n *apiextensionsv1.JSONSchemaProps) bool {
		if n.Format != "" && !formatSupported(n.Type, n.Format) {
			formats = append(formats, fmt.Sprintf("unrecognized format %q", n.Format))
		}
		if n.XListType != nil && *n.XListType == "set" && n.Items != nil && n.Items.Schema != nil {
			if t := n.Items.Schema.Type; t == "object" || t == "array" {
				sets[fmt.Sprintf("x-kubernetes-list-type: set for items of type %q is not supported by server-side apply or CEL validation rules", t)] = true
			}
		}
		return true
	})
	for _, w := range []string{"array", "object"} {
		if m := fmt.Sprintf("x-kubernetes-list-type: set for items of type %q is not supported by server-side apply or CEL validation rules", w); sets[m] {
			formats = append(formats, m)
		}
	}
	return formats
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func sortedDependencyNames(m apiextensionsv1.JSONSchemaDependencies) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
