package openapi

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// customDefName is the definition name Kubernetes gives a custom resource
// kind: the group's labels reversed, the version and the kind
// ("stable.example.com/v1" CronTab is "com.example.stable.v1.CronTab").
func customDefName(gvk schema.GroupVersionKind) string {
	labels := strings.Split(gvk.Group, ".")
	slices.Reverse(labels)
	return strings.Join(labels, ".") + "." + gvk.Version + "." + gvk.Kind
}

// addCustom adds the object and list definitions of a custom resource
// described by its CRD schema and returns their names.
func (d *definitions) addCustom(gvk schema.GroupVersionKind, s *apiextensionsv1.JSONSchemaProps) (string, string, error) {
	objectMeta, err := d.add(reflect.TypeFor[metav1.ObjectMeta]())
	if err != nil {
		return "", "", err
	}
	listMeta, err := d.add(reflect.TypeFor[metav1.ListMeta]())
	if err != nil {
		return "", "", err
	}
	obj := fromCRDSchema(s)
	if obj.Properties == nil {
		obj.Properties = map[string]*jsonSchema{}
	}
	obj.Type = "object"
	obj.Properties["apiVersion"] = &jsonSchema{Type: "string", Description: "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"}
	obj.Properties["kind"] = &jsonSchema{Type: "string", Description: "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"}
	obj.Properties["metadata"] = &jsonSchema{Ref: objectMeta, Description: "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"}
	name := customDefName(gvk)
	if _, dup := d.schemas[name]; dup {
		return "", "", fmt.Errorf("definition %s declared twice", name)
	}
	d.schemas[name] = obj
	listName := name + "List"
	d.schemas[listName] = &jsonSchema{
		Type:        "object",
		Description: gvk.Kind + "List is a list of " + gvk.Kind,
		Properties: map[string]*jsonSchema{
			"apiVersion": {Type: "string", Description: obj.Properties["apiVersion"].Description},
			"kind":       {Type: "string", Description: obj.Properties["kind"].Description},
			"items":      {Type: "array", Description: "List of " + strings.ToLower(gvk.Kind) + "s. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md", Items: ref(name)},
			"metadata":   {Ref: listMeta, Description: "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"},
		},
		Required: []string{"items"},
	}
	return name, listName, nil
}

// fromCRDSchema converts a CRD schema to a document schema: structure,
// types and descriptions in both dialects; the value constraints and
// x-kubernetes extensions too, those Swagger 2.0 lacks in OpenAPI 3.0 only.
func fromCRDSchema(s *apiextensionsv1.JSONSchemaProps) *jsonSchema {
	out := &jsonSchema{Description: s.Description, Type: s.Type, Format: s.Format, Required: slices.Clone(s.Required)}
	if s.XIntOrString {
		out.Type = ""
		out.Format = "int-or-string"
		out.OneOfTypes = []string{"integer", "string"}
	}
	if s.Items != nil && s.Items.Schema != nil {
		out.Items = fromCRDSchema(s.Items.Schema)
	}
	if len(s.Properties) > 0 {
		out.Properties = make(map[string]*jsonSchema, len(s.Properties))
		for name, p := range s.Properties {
			out.Properties[name] = fromCRDSchema(&p)
		}
	}
	if ap := s.AdditionalProperties; ap != nil && ap.Schema != nil {
		out.AdditionalProperties = fromCRDSchema(ap.Schema)
	}
	ext := map[string]any{}
	set := func(m map[string]any, k string, v any, ok bool) {
		if ok {
			m[k] = v
		}
	}
	set(ext, "x-kubernetes-preserve-unknown-fields", true, s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields)
	set(ext, "x-kubernetes-embedded-resource", true, s.XEmbeddedResource)
	set(ext, "x-kubernetes-int-or-string", true, s.XIntOrString)
	set(ext, extListType, deref(s.XListType), s.XListType != nil)
	set(ext, "x-kubernetes-list-map-keys", s.XListMapKeys, len(s.XListMapKeys) > 0)
	set(ext, "x-kubernetes-map-type", deref(s.XMapType), s.XMapType != nil)
	set(ext, "enum", rawList(s.Enum), len(s.Enum) > 0)
	set(ext, "pattern", s.Pattern, s.Pattern != "")
	set(ext, "maximum", deref(s.Maximum), s.Maximum != nil)
	set(ext, "minimum", deref(s.Minimum), s.Minimum != nil)
	set(ext, "exclusiveMaximum", true, s.ExclusiveMaximum)
	set(ext, "exclusiveMinimum", true, s.ExclusiveMinimum)
	set(ext, "maxLength", deref(s.MaxLength), s.MaxLength != nil)
	set(ext, "minLength", deref(s.MinLength), s.MinLength != nil)
	set(ext, "maxItems", deref(s.MaxItems), s.MaxItems != nil)
	set(ext, "minItems", deref(s.MinItems), s.MinItems != nil)
	set(ext, "maxProperties", deref(s.MaxProperties), s.MaxProperties != nil)
	set(ext, "minProperties", deref(s.MinProperties), s.MinProperties != nil)
	set(ext, "multipleOf", deref(s.MultipleOf), s.MultipleOf != nil)
	if len(ext) > 0 {
		out.Ext = ext
	}
	v3 := map[string]any{}
	set(v3, "nullable", true, s.Nullable)
	if s.Default != nil {
		var v any
		if json.Unmarshal(s.Default.Raw, &v) == nil {
			v3["default"] = v
		}
	}
	if len(s.XValidations) > 0 {
		v3["x-kubernetes-validations"] = s.XValidations
	}
	if len(v3) > 0 {
		out.V3Only = v3
	}
	return out
}

func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

func rawList(js []apiextensionsv1.JSON) []any {
	out := make([]any, 0, len(js))
	for _, j := range js {
		var v any
		if json.Unmarshal(j.Raw, &v) == nil {
			out = append(out, v)
		}
	}
	return out
}
