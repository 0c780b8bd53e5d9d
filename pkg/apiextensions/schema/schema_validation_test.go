package schema

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestValidateSchema(t *testing.T) {
	const p = "spec.versions[0].schema.openAPIV3Schema"
	tests := []struct {
		name   string
		schema string
		want   []string
	}{
		{name: "valid", schema: `
type: object
properties:
  spec:
    type: object
    default: {}
    properties:
      replicas: {type: integer, default: 1, minimum: 0}
      ports:
        type: array
        x-kubernetes-list-type: map
        x-kubernetes-list-map-keys: [port, protocol]
        items:
          type: object
          required: [port]
          properties:
            port: {type: integer}
            protocol: {type: string, default: TCP}
      tags: {type: array, x-kubernetes-list-type: set, items: {type: string}}
      labels: {type: object, x-kubernetes-map-type: granular, additionalProperties: {type: string}}
      any: {type: object, additionalProperties: true, properties: {a: {type: string}}}
`},
		{name: "nullable root", schema: `{type: object, nullable: true}`, want: []string{
			p + ".nullable: Forbidden: nullable cannot be true at the root"}},
		{name: "unsupported features", schema: `
type: object
properties:
  a:
    type: object
    id: x
    $ref: "#/definitions/d"
    definitions: {d: {type: string}}
    patternProperties: {"^x": {type: string}}
    dependencies: {b: [c]}
  b: {type: array, additionalItems: false, items: [{type: string}]}
  c: {type: "null"}
  d: {type: foo}
`, want: []string{
			p + ".properties[a].id: Forbidden: id is not supported",
			p + ".properties[a].patternProperties: Forbidden: patternProperties is not supported",
			p + ".properties[a].definitions: Forbidden: definitions is not supported",
			p + ".properties[a].dependencies: Forbidden: dependencies is not supported",
			p + ".properties[a].$ref: Forbidden: $ref is not supported",
			p + ".properties[b].additionalItems: Forbidden: additionalItems is not supported",
			p + ".properties[b].items: Forbidden: items must be a schema object and not an array",
			p + `.properties[c].type: Unsupported value: "null": supported values: "array", "boolean", "integer", "number", "object", "string"`,
			p + ".properties[c].type: Forbidden: type cannot be set to null, use nullable as an alternative",
			p + `.properties[d].type: Unsupported value: "foo": supported values: "array", "boolean", "integer", "number", "object", "string"`,
		}},
		{name: "uniqueItems", schema: `{type: object, properties: {a: {type: array, uniqueItems: true, items: {type: string}}}}`, want: []string{
			p + ".properties[a].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"}},
		{name: "properties with additionalProperties", schema: `{type: object, properties: {a: {type: object, properties: {x: {type: string}}, additionalProperties: {type: string}}}}`, want: []string{
			p + ".properties[a].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"}},
		{name: "preserve-unknown-fields false", schema: `{type: object, properties: {a: {type: object, x-kubernetes-preserve-unknown-fields: false}}}`, want: []string{
			p + ".properties[a].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined"}},
		{name: "map type", schema: `{type: object, properties: {a: {type: string, x-kubernetes-map-type: atomic}, b: {x-kubernetes-map-type: other, x-kubernetes-preserve-unknown-fields: true}}}`, want: []string{
			p + `.properties[a].type: Invalid value: "string": must be object if x-kubernetes-map-type is specified`,
			p + ".properties[b].type: Required value: must be object if x-kubernetes-map-type is specified",
			p + `.properties[b].x-kubernetes-map-type: Unsupported value: "other": supported values: "atomic", "granular"`,
		}},
		{name: "list type", schema: `
type: object
properties:
  a: {type: string, x-kubernetes-list-type: set}
  b: {type: array, x-kubernetes-list-type: bag, items: {type: string}}
  c: {type: array, x-kubernetes-list-map-keys: [k], items: {type: object, properties: {k: {type: string}}}}
  d: {type: array, x-kubernetes-list-type: set, x-kubernetes-list-map-keys: [k], items: {type: object, x-kubernetes-map-type: atomic, properties: {k: {type: string}}}}
  e: {type: array, x-kubernetes-list-type: set, items: {type: object, properties: {k: {type: string}}}}
  f: {type: array, x-kubernetes-list-type: set, items: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [k], items: {type: object, required: [k], properties: {k: {type: string}}}}}
  g: {type: array, x-kubernetes-list-type: set, items: {type: string, nullable: true}}
`, want: []string{
			p + `.properties[a].type: Invalid value: "string": must be array if x-kubernetes-list-type is specified`,
			p + `.properties[b].x-kubernetes-list-type: Unsupported value: "bag": supported values: "atomic", "set", "map"`,
			p + ".properties[c].x-kubernetes-list-type: Required value: must be map if x-kubernetes-list-map-keys is non-empty",
			p + `.properties[d].x-kubernetes-list-type: Invalid value: "set": must be map if x-kubernetes-list-map-keys is non-empty`,
			p + `.properties[e].items.x-kubernetes-map-type: Invalid value: null: must be atomic as item of a list with x-kubernetes-list-type=set`,
			p + `.properties[f].items.x-kubernetes-list-type: Invalid value: "map": must be atomic as item of a list with x-kubernetes-list-type=set`,
			p + ".properties[g].items.nullable: Forbidden: cannot be nullable when x-kubernetes-list-type is set",
		}},
		{name: "list map keys", schema: `
type: object
properties:
  a: {type: array, x-kubernetes-list-type: map, items: {type: object}}
  b: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [k], items: {type: string}}
  c: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [k, x, k], items: {type: object, required: [k], properties: {k: {type: string}}}}
  d: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [k], items: {type: object, properties: {k: {type: object, nullable: true}}}}
`, want: []string{
			p + ".properties[a].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map",
			p + `.properties[b].items.type: Invalid value: "string": must be object if parent array's x-kubernetes-list-type is map`,
			p + `.properties[c].x-kubernetes-list-map-keys: Invalid value: ["k","x","k"]: entries must all be names of item properties`,
			p + `.properties[c].x-kubernetes-list-map-keys: Invalid value: ["k","x","k"]: must not contain duplicate entries`,
			p + `.properties[d].items.properties[k].type: Invalid value: "object": must be a scalar type if parent array's x-kubernetes-list-type is map`,
			p + ".properties[d].items.properties[k].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
			p + ".properties[d].items.properties[k].nullable: Forbidden: this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
		}},
		{name: "defaults forbidden in root meta", schema: `
type: object
properties:
  apiVersion: {type: string, default: v1}
  kind: {type: string, default: K}
  metadata: {type: object, default: {}}
`, want: []string{
			p + ".properties[apiVersion].default: Forbidden: must not be set in top-level apiVersion",
			p + ".properties[kind].default: Forbidden: must not be set in top-level kind",
			p + ".properties[metadata].default: Forbidden: must not be set in top-level metadata",
		}},
		{name: "embedded resource in resource meta", schema: `{type: object, properties: {t: {type: object, x-kubernetes-embedded-resource: true, properties: {metadata: {type: object, properties: {x: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}, labels: {type: object, additionalProperties: {type: string, default: "v"}}}}}}}}`, want: []string{
			p + ".properties[t].properties[metadata].properties[labels].additionalProperties.default: Forbidden: must not be set inside additionalProperties applying to object metadata",
			p + ".properties[t].properties[metadata].properties[x].x-kubernetes-embedded-resource: Forbidden: must not be used inside of resource meta",
		}},
		{name: "default of the wrong type", schema: `{type: object, properties: {a: {type: integer, default: "x"}, b: {type: string, enum: [p, q], default: r}}}`, want: []string{
			p + `.properties[a].default: Invalid value: "string":  in body must be of type integer: "string"`,
			p + `.properties[b].default: Unsupported value: "r": supported values: "p", "q"`,
		}},
		{name: "default not pruned", schema: `{type: object, properties: {a: {type: object, properties: {x: {type: string}}, default: {x: "1", z: 2}}}}`, want: []string{
			p + `.properties[a].default: Invalid value: {"x":"1","z":2}: must not have unknown fields`,
		}},
		{name: "default in embedded metadata", schema: `{type: object, properties: {t: {type: object, x-kubernetes-embedded-resource: true, properties: {metadata: {type: object, properties: {name: {type: string, default: "a/b"}, namespace: {type: string, default: ok}}}}}}}`, want: []string{
			p + `.properties[t].properties[metadata].properties[name].default: Invalid value: "a/b": must result in valid metadata: metadata.name: Invalid value: "a/b": may not contain '/'`,
		}},
		{name: "defaults of objects", schema: `
type: object
properties:
  d:
    type: object
    properties: {good: {type: string}, bad: {type: integer}}
    default: {good: a, bad: a}
  e:
    type: object
    x-kubernetes-preserve-unknown-fields: true
    properties:
      preserved: {type: object, default: {foo: abc}}
      nested: {type: object, properties: {foo: {type: string}}, default: {foo: abc, bar: 42}}
  embedded:
    type: object
    x-kubernetes-embedded-resource: true
    properties: {foo: {type: string}}
    default: {foo: abc, apiVersion: foo/v1, kind: v1, metadata: {name: foo}}
  embeddedPreserve:
    type: object
    x-kubernetes-embedded-resource: true
    x-kubernetes-preserve-unknown-fields: true
    default: {apiVersion: foo/v1, kind: v1, metadata: {name: foo, unspecified: bar}, bar: 42}
  embeddedBad:
    type: object
    x-kubernetes-embedded-resource: true
    x-kubernetes-preserve-unknown-fields: true
    default: {kind: "1x"}
`, want: []string{
			p + `.properties[d].default.bad: Invalid value: "string": bad in body must be of type integer: "string"`,
			p + `.properties[e].properties[nested].default: Invalid value: {"bar":42,"foo":"abc"}: must not have unknown fields`,
			p + `.properties[e].properties[preserved].default: Invalid value: {"foo":"abc"}: must not have unknown fields`,
			p + ".properties[embeddedBad].default.apiVersion: Required value",
			p + `.properties[embeddedBad].default.kind: Invalid value: "1x": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`,
		}},
		{name: "defaults not checked when not structural", schema: `{type: object, properties: {a: {default: "x"}}}`},
		{name: "x-kubernetes-validations static checks", schema: `
type: object
x-kubernetes-validations:
- rule: " "
- rule: "self.a"
  message: " "
- rule: "self.a"
  message: "two\nlines"
- rule: "self.a ||\nself.b"
- rule: "self.a"
  messageExpression: " "
  reason: Other
  fieldPath: " "
`, want: []string{
			p + ".x-kubernetes-validations[0].rule: Required value: rule is not specified",
			p + `.x-kubernetes-validations[1].message: Invalid value: " ": must be non-empty if specified`,
			p + `.x-kubernetes-validations[2].message: Invalid value: "two\nlines": must not contain line breaks`,
			p + ".x-kubernetes-validations[3].message: Required value: message must be specified if rule contains line breaks",
			p + ".x-kubernetes-validations[4].messageExpression: Required value: messageExpression must be non-empty if specified",
			p + `.x-kubernetes-validations[4].reason: Unsupported value: "Other": supported values: "FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"`,
			p + `.x-kubernetes-validations[4].fieldPath: Invalid value: " ": must be non-empty if specified`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := messages(ValidateSchema(schemaPath, props(t, tt.schema)))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ValidateSchema() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWarnings(t *testing.T) {
	s := props(t, `
type: object
properties:
  a: {type: string, format: no-such}
  b: {type: integer, format: int16}
  c: {type: string, format: date-time}
  d: {type: array, x-kubernetes-list-type: set, items: {type: object, x-kubernetes-map-type: atomic}}
  e: {type: string, format: k8s-short-name}
`)
	want := []string{
		`unrecognized format "no-such"`,
		`unrecognized format "int16"`,
		`x-kubernetes-list-type: set for items of type "object" is not supported by server-side apply or CEL validation rules`,
	}
	if diff := cmp.Diff(want, Warnings(s)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestValidateRootForStatus(t *testing.T) {
	const p = "spec.versions[0].schema.openAPIV3Schema"
	tests := []struct {
		name   string
		schema string
		want   []string
	}{
		{name: "allowed", schema: `{type: object, description: d, required: [spec], properties: {spec: {type: object}}, x-kubernetes-preserve-unknown-fields: true}`},
		{name: "type", schema: `{type: string}`, want: []string{
			p + `.type: Invalid value: "string": only "object" is allowed as the type at the root of the schema if the status subresource is enabled`}},
		{name: "anyOf", schema: `{type: object, anyOf: [{required: [a]}]}`, want: []string{
			p + `: Invalid value: {"type":"object","anyOf":[{"required":["a"]}]}: only [Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations] fields are allowed at the root of the schema if the status subresource is enabled`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := messages(ValidateRootForStatus(schemaPath, props(t, tt.schema)))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
