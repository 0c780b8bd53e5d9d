package celrules

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

const costHint = " (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"

func TestValidateRules(t *testing.T) {
	const spec = "spec.versions[0].schema.openAPIV3Schema.properties[spec]"
	tests := []struct {
		name   string
		schema string // of spec
		want   []string
	}{
		{
			name: "valid rules",
			schema: `type: object
properties:
  replicas: {type: integer}
  listeners:
    type: array
    maxItems: 64
    x-kubernetes-list-type: map
    x-kubernetes-list-map-keys: [name]
    items:
      type: object
      required: [name]
      properties:
        name: {type: string, maxLength: 253}
        port: {type: integer}
      x-kubernetes-validations:
      - rule: self.port == oldSelf.port
    x-kubernetes-validations:
    - rule: self.all(l1, self.exists_one(l2, l1.name == l2.name))
x-kubernetes-validations:
- rule: self.replicas >= 0
  messageExpression: "'replicas must not be negative'"
  reason: FieldValueForbidden
  fieldPath: .replicas`,
		},
		{
			name: "syntax error",
			schema: `type: object
properties:
  replicas: {type: integer}
x-kubernetes-validations:
- rule: self.replicas >`,
			want: []string{spec + `.x-kubernetes-validations[0].rule: Invalid value: {"rule":"self.replicas \u003e"}: compilation failed: ERROR: <input>:1:16: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}
 | self.replicas >
 | ...............^`},
		},
		{
			name: "unknown field",
			schema: `type: object
properties:
  replicas: {type: integer}
x-kubernetes-validations:
- rule: self.replica > 0
  message: replicas must be positive`,
			want: []string{spec + `.x-kubernetes-validations[0].rule: Invalid value: {"rule":"self.replica \u003e 0","message":"replicas must be positive"}: compilation failed: ERROR: <input>:1:5: undefined field 'replica'
 | self.replica > 0
 | ....^`},
		},
		{
			name: "rule must return a bool",
			schema: `type: object
properties:
  replicas: {type: integer}
x-kubernetes-validations:
- rule: self.replicas`,
			want: []string{spec + `.x-kubernetes-validations[0].rule: Invalid value: {"rule":"self.replicas"}: cel expression must evaluate to a bool`},
		},
		{
			name: "cost exceeded on an unbounded list with nested loops",
			schema: `type: object
properties:
  hosts:
    type: array
    items: {type: string}
    x-kubernetes-validations:
    - rule: self.all(a, self.all(b, a == b || a != b))`,
			want: []string{
				spec + ".properties[hosts].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x" + costHint,
				spec + ".properties[hosts].x-kubernetes-validations[0].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
				"spec.versions[0].schema.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x" + costHint,
			},
		},
		{
			name: "the same loops fit once the list and strings are bounded",
			schema: `type: object
properties:
  hosts:
    type: array
    maxItems: 100
    items: {type: string, maxLength: 253}
    x-kubernetes-validations:
    - rule: self.all(a, self.all(b, a == b || a != b))`,
		},
		{
			name: "cost multiplied by an unbounded parent list",
			schema: `type: object
properties:
  rules:
    type: array
    items:
      type: object
      properties:
        hosts:
          type: array
          maxItems: 100
          items: {type: string, maxLength: 253}
          x-kubernetes-validations:
          - rule: self.all(a, self.all(b, a == b || a != b))`,
			want: []string{
				spec + ".properties[rules].items.properties[hosts].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x" + costHint,
				spec + ".properties[rules].items.properties[hosts].x-kubernetes-validations[0].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
				"spec.versions[0].schema.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x" + costHint,
			},
		},
		{
			name: "blank messageExpression is a schema error, so nothing is compiled",
			schema: `type: object
properties:
  replicas: {type: integer}
x-kubernetes-validations:
- rule: self.replicas > 0
  messageExpression: self.replicas
- rule: self.replicas > 0
  messageExpression: "'bad ' + self.nope"
- rule: self.replicas > 0
  messageExpression: "  "`,
			want: []string{
				spec + ".x-kubernetes-validations[2].messageExpression: Required value: messageExpression must be non-empty if specified",
			},
		},
		{
			name: "messageExpression compile errors",
			schema: `type: object
properties:
  replicas: {type: integer}
x-kubernetes-validations:
- rule: self.replicas > 0
  messageExpression: self.replicas
- rule: self.replicas > 0
  messageExpression: "'bad ' + self.nope"`,
			want: []string{
				spec + `.x-kubernetes-validations[0].messageExpression: Invalid value: {"rule":"self.replicas \u003e 0","messageExpression":"self.replicas"}: messageExpression must evaluate to a string`,
				spec + `.x-kubernetes-validations[1].messageExpression: Invalid value: {"rule":"self.replicas \u003e 0","messageExpression":"'bad ' + self.nope"}: messageExpression compilation failed: ERROR: <input>:1:14: undefined field 'nope'
 | 'bad ' + self.nope
 | .............^`,
			},
		},
		{
			name: "invalid reason",
			schema: `type: object
x-kubernetes-validations:
- rule: "true"
  reason: FieldValueBogus`,
			want: []string{spec + `.x-kubernetes-validations[0].reason: Unsupported value: "FieldValueBogus": supported values: "FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"`},
		},
		{
			name: "invalid fieldPaths",
			schema: `type: object
properties:
  replicas: {type: integer}
  labels: {type: object, additionalProperties: {type: string}}
x-kubernetes-validations:
- rule: "true"
  fieldPath: .nope
- rule: "true"
  fieldPath: replicas
- rule: "true"
  fieldPath: .replicas.deeper
- rule: "true"
  fieldPath: ".labels['any-key']"
- rule: "true"
  fieldPath: ".labels[0]"`,
			want: []string{
				spec + `.x-kubernetes-validations[0].fieldPath: Invalid value: ".nope": must be a valid path`,
				spec + `.x-kubernetes-validations[1].fieldPath: Invalid value: "replicas": must be a valid path`,
				spec + `.x-kubernetes-validations[2].fieldPath: Invalid value: ".replicas.deeper": must be a valid path`,
				spec + `.x-kubernetes-validations[4].fieldPath: Invalid value: ".labels[0]": must be a valid path`,
			},
		},
		{
			name: "missing rule and bad messages",
			schema: `type: object
x-kubernetes-validations:
- rule: " "
- rule: "true"
  message: " "
- rule: "true"
  message: "two\nlines"
- rule: "true &&\ntrue"`,
			want: []string{
				spec + ".x-kubernetes-validations[0].rule: Required value: rule is not specified",
				spec + `.x-kubernetes-validations[1].message: Invalid value: " ": must be non-empty if specified`,
				spec + `.x-kubernetes-validations[2].message: Invalid value: "two\nlines": must not contain line breaks`,
				spec + ".x-kubernetes-validations[3].message: Required value: message must be specified if rule contains line breaks",
			},
		},
		{
			name: "transition rule inside an atomic list",
			schema: `type: object
properties:
  ports:
    type: array
    maxItems: 10
    items:
      type: object
      properties:
        port: {type: integer}
      x-kubernetes-validations:
      - rule: self.port == oldSelf.port`,
			want: []string{spec + `.properties[ports].items.x-kubernetes-validations[0].rule: Invalid value: "self.port == oldSelf.port": oldSelf cannot be used on the uncorrelatable portion of the schema within ` + spec + ".properties[ports]"},
		},
		{
			name: "transition rule below a set list names the highest uncorrelatable list",
			schema: `type: object
properties:
  groups:
    type: array
    x-kubernetes-list-type: set
    maxItems: 10
    items:
      type: array
      x-kubernetes-list-type: map
      x-kubernetes-list-map-keys: [name]
      maxItems: 10
      items:
        type: object
        required: [name]
        properties:
          name: {type: string, maxLength: 10}
        x-kubernetes-validations:
        - rule: self == oldSelf`,
			want: []string{spec + `.properties[groups].items.items.x-kubernetes-validations[0].rule: Invalid value: "self == oldSelf": oldSelf cannot be used on the uncorrelatable portion of the schema within ` + spec + ".properties[groups]"},
		},
		{
			name: "transition rule below an object of unknown map type",
			schema: `type: object
properties:
  value:
    type: object
    x-kubernetes-map-type: future
    properties:
      subfield:
        type: string
        maxLength: 10
        x-kubernetes-validations:
        - rule: self == oldSelf`,
			want: []string{spec + `.properties[value].properties[subfield].x-kubernetes-validations[0].rule: Invalid value: "self == oldSelf": oldSelf cannot be used on the uncorrelatable portion of the schema within ` + spec + ".properties[value]"},
		},
		{
			name: "transition rules on atomic and set lists themselves, on map-list items and on map values",
			schema: `type: object
properties:
  atomic: {type: array, maxItems: 10, items: {type: integer}, x-kubernetes-validations: [{rule: self == oldSelf}]}
  set: {type: array, x-kubernetes-list-type: set, maxItems: 10, items: {type: integer}, x-kubernetes-validations: [{rule: self == oldSelf}]}
  granular:
    type: object
    x-kubernetes-map-type: granular
    additionalProperties: {type: string, maxLength: 10, x-kubernetes-validations: [{rule: self == oldSelf}]}`,
		},
		{
			name:   "metadata.name and generateName are bounded by the name length limit",
			schema: `type: object`,
		},
		{
			name: "optionalOldSelf without oldSelf",
			schema: `type: object
x-kubernetes-validations:
- rule: "true"
  optionalOldSelf: true`,
			want: []string{spec + ".x-kubernetes-validations[0].optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used in rule"},
		},
		{
			name: "schema errors below skip the CEL checks above",
			schema: `type: object
properties:
  a:
    type: string
    x-kubernetes-validations:
    - rule: " "
x-kubernetes-validations:
- rule: self.nope`,
			want: []string{spec + ".properties[a].x-kubernetes-validations[0].rule: Required value: rule is not specified"},
		},
		{
			name: "kubernetes library functions compile",
			schema: `type: object
properties:
  cpu: {type: string, maxLength: 20}
  url: {type: string, maxLength: 2048}
  cidr: {type: string, maxLength: 43}
  name: {type: string, maxLength: 63}
  ports: {type: array, maxItems: 10, items: {type: integer}}
x-kubernetes-validations:
- rule: quantity(self.cpu).isLessThan(quantity('64'))
- rule: isURL(self.url) && url(self.url).getScheme() in ['http', 'https']
- rule: isCIDR(self.cidr) && cidr(self.cidr).prefixLength() <= 24
- rule: "!format.dns1123Label().validate(self.name).hasValue()"
- rule: self.ports.isSorted() && self.ports.max() < 65536 && self.ports.indexOf(0) == -1
- rule: self.name.find('[0-9]+') == '' || self.name.findAll('[0-9]').size() < 3
- rule: sets.contains(['a', 'b'], [self.name.lowerAscii()]) || true`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := errorStrings(ValidateRules(schemaPath, mustSchema(t, specSchema(tt.schema))))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestValidateRulesCosts covers cost limits on whole schemas, the way
// kube-apiserver's own tests of them do.
func TestValidateRulesCosts(t *testing.T) {
	const root = "spec.versions[0].schema.openAPIV3Schema"
	tests := []struct {
		name   string
		schema string
		want   []string
	}{
		{
			name: "names of the resource fit the budget",
			schema: `type: object
x-kubernetes-validations:
- rule: self.metadata.name.contains(self.metadata.name) && self.metadata.generateName.contains(self.metadata.generateName)`,
		},
		{
			name: "nested loops over a short list of short strings",
			schema: `type: object
properties:
  f:
    type: array
    maxItems: 5
    items: {type: string, maxLength: 5}
    x-kubernetes-validations:
    - rule: self.all(x, self.exists_one(y, x.lowerAscii() == y.lowerAscii()))`,
		},
		{
			// 3 MiB strings concatenated 7 times: 0.1 * 3145726 * (2+3+...+8)
			name: "messageExpression over the per-expression limit",
			schema: `type: object
properties:
  f:
    type: array
    items: {type: string}
    x-kubernetes-validations:
    - rule: "true"
      messageExpression: self[0] + self[1] + self[2] + self[3] + self[4] + self[5] + self[6] + self[7]`,
			want: []string{root + ".properties[f].x-kubernetes-validations[0].messageExpression: Forbidden: estimated messageExpression cost exceeds budget by factor of 1.101006x" + costHint},
		},
		{
			name: "messageExpression over the per-CRD limit",
			schema: `type: object
properties:
  f:
    type: array
    items: {type: string}
    x-kubernetes-validations:
    - rule: "true"
      messageExpression: string(self[0]) + string(self[1]) + string(self[2])`,
			want: []string{
				root + ".properties[f].x-kubernetes-validations[0].messageExpression: Forbidden: estimated messageExpression cost exceeds budget by factor of more than 100x" + costHint,
				root + ".properties[f].x-kubernetes-validations[0].messageExpression: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
				root + ": Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x" + costHint,
			},
		},
		{
			name: "total over the per-CRD limit",
			schema: `type: object
properties:
  list:
    type: array
    maxItems: 100000
    items:
      type: string
      maxLength: 5000
      x-kubernetes-validations: [{rule: "self.contains('keyword')"}]
  map:
    type: object
    maxProperties: 1000
    additionalProperties:
      type: string
      maxLength: 5000
      x-kubernetes-validations: [{rule: "self.contains('keyword')"}]
  field:
    type: integer
    x-kubernetes-validations: [{rule: self > 50 && self < 100}]`,
			want: []string{
				root + ".properties[list].items.x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of 20.0x" + costHint,
				root + ".properties[list].items.x-kubernetes-validations[0].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
				root + ".properties[map].additionalProperties.x-kubernetes-validations[0].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
				root + ": Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of 2.0x" + costHint,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := errorStrings(ValidateRules(schemaPath, mustSchema(t, tt.schema)))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateRulesWithoutRules(t *testing.T) {
	if errs := ValidateRules(schemaPath, mustSchema(t, `{type: object, properties: {spec: {type: object}}}`)); errs != nil {
		t.Fatalf("got %v", errs)
	}
}
