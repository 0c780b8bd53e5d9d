package openapi

// jsonSchema is one JSON schema in the documents, in a form neutral between
// Swagger 2.0 and OpenAPI 3.0; render turns it into the JSON value of one of
// them. A schema with a Ref is a reference to a named definition and carries
// no type of its own; the fields beside it (description and the patch
// extensions) describe the property that holds the reference.
type jsonSchema struct {
	// Ref is the name of a definition, such as
	// "io.k8s.api.core.v1.PodSpec", without any "#/definitions/" prefix.
	Ref         string
	Description string
	Type        string
	Format      string
	// Items is the element schema of an array.
	Items *jsonSchema
	// Properties are the fields of an object, by JSON name.
	Properties map[string]*jsonSchema
	// AdditionalProperties is the value schema of a map.
	AdditionalProperties *jsonSchema
	// Required lists property names in declaration order.
	Required []string
	// OneOfTypes lists the scalar types a value may take in OpenAPI 3
	// (quantities and int-or-string); Swagger 2.0 has no oneOf, so only Type
	// is rendered there.
	OneOfTypes []string
	// Default is the JSON value of the "default" keyword, rendered in
	// OpenAPI 3 only, as kube-apiserver publishes it; nil means none.
	Default any
	// Ext holds vendor extensions ("x-kubernetes-...") rendered verbatim.
	Ext map[string]any
	// V3Only holds keywords rendered verbatim in OpenAPI 3.0 only (those
	// of custom resource schemas Swagger 2.0 cannot say, such as nullable
	// and oneOf), as Kubernetes publishes CRDs.
	V3Only map[string]any
}

// dialect selects the OpenAPI flavour a schema is rendered for.
type dialect int

const (
	swagger2 dialect = iota
	openAPI3
)

// refPrefix is where a dialect keeps named schemas.
func (d dialect) refPrefix() string {
	if d == openAPI3 {
		return "#/components/schemas/"
	}
	return "#/definitions/"
}

// ref returns a reference to the named definition.
func ref(name string) *jsonSchema { return &jsonSchema{Ref: name} }

// render returns the JSON value of s in dialect d. Maps are used so that
// encoding/json writes keys in sorted order, which keeps the documents, and
// the hashes derived from them, stable from one build to the next.
func (s *jsonSchema) render(d dialect) map[string]any {
	out := make(map[string]any, 4)
	if s.Ref != "" {
		ref := d.refPrefix() + s.Ref
		if d == openAPI3 && (s.Description != "" || len(s.Ext) > 0 || s.Default != nil) {
			// OpenAPI 3.0 ignores the siblings of a $ref; wrapping it in
			// allOf keeps the property's own description and extensions,
			// which is how Kubernetes publishes them and where kubectl
			// explain and strategic merge patch look for them.
			out["allOf"] = []any{map[string]any{"$ref": ref}}
		} else {
			out["$ref"] = ref
		}
	}
	if s.Description != "" {
		out["description"] = s.Description
	}
	if d == openAPI3 && len(s.OneOfTypes) > 0 {
		one := make([]any, 0, len(s.OneOfTypes))
		for _, t := range s.OneOfTypes {
			one = append(one, map[string]any{"type": t})
		}
		out["oneOf"] = one
	} else if s.Type != "" {
		out["type"] = s.Type
	}
	if s.Format != "" {
		out["format"] = s.Format
	}
	if s.Items != nil {
		out["items"] = s.Items.render(d)
	}
	if len(s.Properties) > 0 {
		props := make(map[string]any, len(s.Properties))
		for name, p := range s.Properties {
			props[name] = p.render(d)
		}
		out["properties"] = props
	}
	if s.AdditionalProperties != nil {
		out["additionalProperties"] = s.AdditionalProperties.render(d)
	}
	if len(s.Required) > 0 {
		out["required"] = s.Required
	}
	if s.Default != nil && d == openAPI3 {
		// kube-apiserver prunes every default from its Swagger 2.0
		// document and publishes them in OpenAPI 3 only.
		out["default"] = s.Default
	}
	for k, v := range s.Ext {
		out[k] = v
	}
	if d == openAPI3 {
		for k, v := range s.V3Only {
			out[k] = v
		}
	}
	return out
}
