package schema

import (
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// schemaPath is where a CRD's first version schema lives.
var schemaPath = field.NewPath("spec", "versions").Index(0).Child("schema", "openAPIV3Schema")

func TestValidateStructural(t *testing.T) {
	const p = "spec.versions[0].schema.openAPIV3Schema"
	tests := []struct {
		name   string
		schema string
		want   []string
	}{
		{name: "minimal", schema: `{type: object}`},
		{name: "typical", schema: `
type: object
properties:
  apiVersion: {type: string}
  kind: {type: string}
  metadata: {type: object}
  spec:
    type: object
    properties:
      port: {x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}], pattern: "^[0-9]+$"}
      other: {x-kubernetes-int-or-string: true, allOf: [{anyOf: [{type: integer}, {type: string}]}, {maxLength: 3}]}
      raw: {x-kubernetes-preserve-unknown-fields: true}
      list: {type: array, items: {type: string}}
      template: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}
    anyOf: [{required: [port]}, {required: [raw]}]
  status: {type: object, x-kubernetes-preserve-unknown-fields: true}
`},
		{name: "missing type", schema: `{type: object, properties: {spec: {properties: {a: {type: string}}}, list: {type: array, items: {}}}}`, want: []string{
			p + ".properties[list].items.type: Required value: must not be empty for specified array items",
			p + ".properties[spec].type: Required value: must not be empty for specified object fields",
		}},
		{name: "root type", schema: `{properties: {a: {type: string}}}`, want: []string{
			p + ".type: Required value: must not be empty at the root",
		}},
		{name: "root not an object", schema: `{type: string}`, want: []string{
			p + `.type: Invalid value: "string": must be object at the root`,
		}},
		{name: "array without items", schema: `{type: object, properties: {a: {type: array}}}`, want: []string{
			p + ".properties[a].items: Required value: must be specified",
		}},
		{name: "additionalProperties at the root", schema: `{type: object, additionalProperties: {type: string}}`, want: []string{
			p + ".additionalProperties: Forbidden: must not be used at the root",
		}},
		{name: "int-or-string combinations", schema: `{type: object, properties: {a: {x-kubernetes-int-or-string: true, x-kubernetes-preserve-unknown-fields: true, x-kubernetes-embedded-resource: true}}}`, want: []string{
			p + ".properties[a].type: Required value: must be object if x-kubernetes-embedded-resource is true",
			p + ".properties[a].x-kubernetes-embedded-resource: Invalid value: true: must be false if x-kubernetes-int-or-string is true",
			p + ".properties[a].x-kubernetes-preserve-unknown-fields: Invalid value: true: must be false if x-kubernetes-int-or-string is true",
		}},
		{name: "embedded resource misuse", schema: `{type: object, properties: {a: {type: string, x-kubernetes-embedded-resource: true}, b: {type: object, x-kubernetes-embedded-resource: true, additionalProperties: {type: string}}}}`, want: []string{
			p + ".properties[a].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
			p + `.properties[a].type: Invalid value: "string": must be object if x-kubernetes-embedded-resource is true`,
			p + ".properties[b].additionalProperties: Forbidden: must not be used if x-kubernetes-embedded-resource is set",
			p + ".properties[b].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
		}},
		{name: "junctors are value-only", schema: `
type: object
properties:
  a:
    type: string
    anyOf:
    - type: string
      description: d
      title: t
      nullable: true
      default: "x"
      x-kubernetes-preserve-unknown-fields: true
      x-kubernetes-embedded-resource: true
      x-kubernetes-int-or-string: true
      x-kubernetes-list-type: atomic
      x-kubernetes-list-map-keys: [k]
      x-kubernetes-map-type: atomic
      x-kubernetes-validations: [{rule: "true"}]
`, want: []string{
			p + ".properties[a].anyOf[0].default: Forbidden: must be undefined to be structural",
			p + ".properties[a].anyOf[0].description: Forbidden: must be empty to be structural",
			p + ".properties[a].anyOf[0].nullable: Forbidden: must be false to be structural",
			p + ".properties[a].anyOf[0].title: Forbidden: must be empty to be structural",
			p + ".properties[a].anyOf[0].type: Forbidden: must be empty to be structural",
			p + ".properties[a].anyOf[0].x-kubernetes-embedded-resource: Forbidden: must be false to be structural",
			p + ".properties[a].anyOf[0].x-kubernetes-int-or-string: Forbidden: must be false to be structural",
			p + ".properties[a].anyOf[0].x-kubernetes-list-map-keys: Forbidden: must be empty to be structural",
			p + ".properties[a].anyOf[0].x-kubernetes-list-type: Forbidden: must be undefined to be structural",
			p + ".properties[a].anyOf[0].x-kubernetes-map-type: Forbidden: must be undefined to be structural",
			p + ".properties[a].anyOf[0].x-kubernetes-preserve-unknown-fields: Forbidden: must be false to be structural",
			p + ".properties[a].anyOf[0].x-kubernetes-validations: Forbidden: must be empty to be structural",
		}},
		{name: "nested additionalProperties and metadata", schema: `{type: object, properties: {a: {type: object, properties: {metadata: {type: object}}, not: {additionalProperties: {type: string}, properties: {metadata: {type: object}}}}}}`, want: []string{
			p + ".properties[a].not.additionalProperties: Forbidden: must be undefined to be structural",
			p + ".properties[a].not.properties[metadata].type: Forbidden: must be empty to be structural",
			p + ".properties[a].not.properties[metadata]: Forbidden: must not be specified in a nested context",
		}},
		{name: "completeness at the root", schema: `{type: object, properties: {a: {type: array, items: {type: string}}}, allOf: [{properties: {b: {}, a: {items: {maxLength: 1}}}}], oneOf: [{items: {}}]}`, want: []string{
			p + ".items: Required value: because it is defined in " + p + ".oneOf[0].items",
			p + ".properties[b]: Required value: because it is defined in " + p + ".allOf[0].properties[b]",
		}},
		{name: "bad pattern", schema: `{type: object, properties: {a: {type: string, pattern: "("}}}`, want: []string{
			p + `.properties[a].pattern: Invalid value: "(": must be a valid regular expression, but isn't: error parsing regexp: missing closing ): ` + "`(`",
		}},
		{name: "root metadata restricted", schema: `{type: object, properties: {metadata: {type: object, properties: {name: {type: string}, labels: {type: object}}}}}`, want: []string{
			p + ".properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified",
		}},
		{name: "root metadata name and generateName allowed", schema: `{type: object, properties: {metadata: {type: object, properties: {name: {type: string, maxLength: 10}, generateName: {type: string}}}}}`},
		{name: "metadata, kind and apiVersion types", schema: `{type: object, properties: {metadata: {type: string}, kind: {type: integer}, apiVersion: {type: object}}}`, want: []string{
			p + `.properties[apiVersion].type: Invalid value: "object": must be string`,
			p + `.properties[kind].type: Invalid value: "integer": must be string`,
			p + `.properties[metadata].type: Invalid value: "string": must be object`,
		}},
		{name: "embedded resource metadata", schema: `{type: object, properties: {t: {type: object, x-kubernetes-embedded-resource: true, properties: {metadata: {type: string}, kind: {type: integer}}}}}`, want: []string{
			p + `.properties[t].properties[kind].type: Invalid value: "integer": must be string`,
			p + `.properties[t].properties[metadata].type: Invalid value: "string": must be object`,
		}},
		{name: "int-or-string anyOf in the wrong order", schema: `{type: object, properties: {a: {x-kubernetes-int-or-string: true, anyOf: [{type: string}, {type: integer}]}}}`, want: []string{
			p + ".properties[a].anyOf[0].type: Forbidden: must be empty to be structural",
			p + ".properties[a].anyOf[1].type: Forbidden: must be empty to be structural",
		}},
		{name: "int-or-string anyOf not first in allOf", schema: `{type: object, properties: {a: {x-kubernetes-int-or-string: true, allOf: [{maxLength: 3}, {anyOf: [{type: integer}, {type: string}]}]}}}`, want: []string{
			p + ".properties[a].allOf[1].anyOf[0].type: Forbidden: must be empty to be structural",
			p + ".properties[a].allOf[1].anyOf[1].type: Forbidden: must be empty to be structural",
		}},
		{name: "preserve-unknown-fields false", schema: `{type: object, properties: {a: {type: object, x-kubernetes-preserve-unknown-fields: false}}}`, want: []string{
			p + `: Invalid value: "": internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined`,
		}},
		{name: "items as an array", schema: `{type: object, properties: {a: {type: array, items: [{type: string}]}}}`, want: []string{
			p + `: Invalid value: "": OpenAPIV3Schema 'items' must be a schema, but is an array`,
		}},
		{name: "not structural at all", schema: `{type: object, properties: {a: {$ref: "#/definitions/x"}}}`, want: []string{
			p + `: Invalid value: "": OpenAPIV3Schema '$ref' is not supported`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := messages(ValidateStructural(schemaPath, props(t, tt.schema)))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ValidateStructural() (-want +got):\n%s", diff)
			}
		})
	}
}

// TestValidateStructuralRootMetadata checks that the root metadata schema
// may restrict name and generateName and nothing else of ObjectMeta.
func TestValidateStructuralRootMetadata(t *testing.T) {
	const forbidden = "spec.versions[0].schema.openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"
	for _, f := range reflect.VisibleFields(reflect.TypeOf(metav1.ObjectMeta{})) {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			got := messages(ValidateStructural(schemaPath, props(t, `{type: object, properties: {metadata: {type: object, properties: {`+name+`: {type: string}}}}}`)))
			var want []string
			if name != "name" && name != "generateName" {
				want = []string{forbidden}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	for _, extra := range []string{`description: d`, `x-kubernetes-preserve-unknown-fields: true`, `maxProperties: 3`, `required: [name]`} {
		t.Run(extra, func(t *testing.T) {
			got := messages(ValidateStructural(schemaPath, props(t, `{type: object, properties: {metadata: {type: object, `+extra+`}}}`)))
			if diff := cmp.Diff([]string{forbidden}, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
