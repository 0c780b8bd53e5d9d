package schema

import (
	"sort"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const validatorSchema = `
type: object
properties:
  spec:
    type: object
    required: [x]
    properties:
      x: {type: string}
      replicas: {type: integer, minimum: 1, maximum: 5}
      even: {type: integer, multipleOf: 2}
      excl: {type: number, exclusiveMinimum: true, minimum: 1, exclusiveMaximum: true, maximum: 3}
      mode: {type: string, enum: [a, b]}
      num: {type: integer, enum: [1, 2]}
      name: {type: string, maxLength: 3, minLength: 2}
      word: {type: string, pattern: "^[a-z]+$"}
      list: {type: array, maxItems: 2, minItems: 1, items: {type: string}}
      labels: {type: object, maxProperties: 1, minProperties: 1, additionalProperties: {type: string}}
      port: {x-kubernetes-int-or-string: true}
      when: {type: string, format: date-time}
      small: {type: integer, format: int32}
      ip: {type: string, format: ipv4}
      unknownFormat: {type: string, format: no-such-format}
      plain: {type: string}
      maybe: {type: string, nullable: true}
      flag: {type: boolean}
      ratio: {type: number}
      one:
        type: object
        properties: {a: {type: string}, b: {type: string}}
        oneOf: [{required: [a]}, {required: [b]}]
      any: {type: string, anyOf: [{maxLength: 1}, {pattern: "^x"}]}
      all: {type: string, allOf: [{maxLength: 1}, {pattern: "^x"}]}
      notx: {type: string, not: {enum: [x]}}
      items:
        type: array
        items:
          type: object
          required: [k]
          properties: {k: {type: string}}
      set: {type: array, x-kubernetes-list-type: set, items: {type: string}}
      objset:
        type: array
        x-kubernetes-list-type: set
        items: {type: object, x-kubernetes-map-type: atomic, properties: {a: {type: integer}}}
      ports:
        type: array
        x-kubernetes-list-type: map
        x-kubernetes-list-map-keys: [port]
        items:
          type: object
          required: [port]
          properties: {port: {type: integer}, name: {type: string}}
      pairs:
        type: array
        x-kubernetes-list-type: map
        x-kubernetes-list-map-keys: [port, protocol]
        items:
          type: object
          required: [port, protocol]
          properties: {port: {type: integer}, protocol: {type: string}}
      template:
        type: object
        x-kubernetes-embedded-resource: true
        x-kubernetes-preserve-unknown-fields: true
`

func TestValidatorValidate(t *testing.T) {
	v, err := NewValidator(props(t, validatorSchema))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		obj  string
		want []string
	}{
		{name: "valid", obj: `{"spec":{"x":"a","replicas":3,"mode":"a","port":8080,"ports":[{"port":1},{"port":2}],"set":["a","b"],"template":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}}}`},
		{name: "int-or-string string", obj: `{"spec":{"x":"a","port":"http"}}`},
		{name: "nullable null", obj: `{"spec":{"x":"a","maybe":null}}`},
		{name: "required", obj: `{"spec":{}}`, want: []string{"spec.x: Required value"}},
		{name: "type integer", obj: `{"spec":{"x":"a","replicas":"string"}}`, want: []string{
			`spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"`}},
		{name: "type integer given a fraction", obj: `{"spec":{"x":"a","replicas":1.5}}`, want: []string{
			`spec.replicas: Invalid value: "number": spec.replicas in body must be of type integer: "number"`,
			`<nil>: Invalid value: "": Checked value must be of type integer (default format) in spec.replicas`}},
		{name: "type boolean", obj: `{"spec":{"x":"a","flag":"true"}}`, want: []string{
			`spec.flag: Invalid value: "string": spec.flag in body must be of type boolean: "string"`}},
		{name: "type number accepts integers", obj: `{"spec":{"x":"a","ratio":2}}`},
		{name: "type object", obj: `{"spec":"x"}`, want: []string{
			`spec: Invalid value: "string": spec in body must be of type object: "string"`}},
		{name: "not nullable", obj: `{"spec":{"x":"a","plain":null}}`, want: []string{
			`spec.plain: Invalid value: "null": spec.plain in body must be of type string: "null"`}},
		{name: "int-or-string", obj: `{"spec":{"x":"a","port":true}}`, want: []string{
			`spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"`}},
		{name: "enum", obj: `{"spec":{"x":"a","mode":"c"}}`, want: []string{
			`spec.mode: Unsupported value: "c": supported values: "a", "b"`}},
		{name: "integer enum", obj: `{"spec":{"x":"a","num":3}}`, want: []string{
			`spec.num: Unsupported value: 3: supported values: "1", "2"`}},
		{name: "maximum", obj: `{"spec":{"x":"a","replicas":7}}`, want: []string{
			`spec.replicas: Invalid value: 7: spec.replicas in body should be less than or equal to 5`}},
		{name: "minimum", obj: `{"spec":{"x":"a","replicas":0}}`, want: []string{
			`spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1`}},
		{name: "exclusive minimum", obj: `{"spec":{"x":"a","excl":1}}`, want: []string{
			`spec.excl: Invalid value: 1: spec.excl in body should be greater than 1`}},
		{name: "exclusive maximum", obj: `{"spec":{"x":"a","excl":3}}`, want: []string{
			`spec.excl: Invalid value: 3: spec.excl in body should be less than 3`}},
		{name: "multipleOf", obj: `{"spec":{"x":"a","even":7}}`, want: []string{
			`spec.even: Invalid value: 7: spec.even in body should be a multiple of 2`}},
		{name: "maxLength", obj: `{"spec":{"x":"a","name":"abcd"}}`, want: []string{
			`spec.name: Too long: may not be more than 3 bytes`}},
		{name: "minLength", obj: `{"spec":{"x":"a","name":"a"}}`, want: []string{
			`spec.name: Invalid value: "a": spec.name in body should be at least 2 chars long`}},
		{name: "pattern", obj: `{"spec":{"x":"a","word":"AB"}}`, want: []string{
			`spec.word: Invalid value: "AB": spec.word in body should match '^[a-z]+$'`}},
		{name: "maxItems", obj: `{"spec":{"x":"a","list":["a","b","c"]}}`, want: []string{
			`spec.list: Too many: 3: must have at most 2 items`}},
		{name: "minItems", obj: `{"spec":{"x":"a","list":[]}}`, want: []string{
			`spec.list: Invalid value: 0: spec.list in body should have at least 1 items`}},
		{name: "maxProperties", obj: `{"spec":{"x":"a","labels":{"a":"1","b":"2"}}}`, want: []string{
			`spec.labels: Too many: 2: must have at most 1 item`}},
		{name: "minProperties", obj: `{"spec":{"x":"a","labels":{}}}`, want: []string{
			`spec.labels: Invalid value: 0: spec.labels in body should have at least 1 properties`}},
		{name: "format date-time", obj: `{"spec":{"x":"a","when":"yesterday"}}`, want: []string{
			`spec.when: Invalid value: "yesterday": spec.when in body must be of type date-time: "yesterday"`}},
		{name: "format date-time valid", obj: `{"spec":{"x":"a","when":"2024-01-02T03:04:05Z"}}`},
		{name: "format ipv4", obj: `{"spec":{"x":"a","ip":"1.2.3"}}`, want: []string{
			`spec.ip: Invalid value: "1.2.3": spec.ip in body must be of type ipv4: "1.2.3"`}},
		{name: "unknown format ignored", obj: `{"spec":{"x":"a","unknownFormat":"anything"}}`},
		{name: "format int32", obj: `{"spec":{"x":"a","small":9999999999}}`, want: []string{
			`<nil>: Invalid value: "": Checked value must be of type integer with format int32 in spec.small`}},
		{name: "oneOf none", obj: `{"spec":{"x":"a","one":{}}}`, want: []string{
			`<nil>: Invalid value: "": "spec.one" must validate one and only one schema (oneOf). Found none valid`,
			`spec.one.a: Required value`}},
		{name: "oneOf two", obj: `{"spec":{"x":"a","one":{"a":"1","b":"2"}}}`, want: []string{
			`<nil>: Invalid value: "": "spec.one" must validate one and only one schema (oneOf). Found 2 valid alternatives`}},
		{name: "anyOf", obj: `{"spec":{"x":"a","any":"ab"}}`, want: []string{
			`<nil>: Invalid value: "": "spec.any" must validate at least one schema (anyOf)`,
			`spec.any: Too long: may not be more than 1 byte`}},
		{name: "allOf", obj: `{"spec":{"x":"a","all":"ab"}}`, want: []string{
			`<nil>: Invalid value: "": "spec.all" must validate all the schemas (allOf). None validated`,
			`spec.all: Invalid value: "ab": spec.all in body should match '^x'`,
			`spec.all: Too long: may not be more than 1 byte`}},
		{name: "not", obj: `{"spec":{"x":"a","notx":"x"}}`, want: []string{
			`<nil>: Invalid value: "": "spec.notx" must not validate the schema (not)`}},
		{name: "array items", obj: `{"spec":{"x":"a","items":[{"k":1},{}]}}`, want: []string{
			`spec.items[0].k: Invalid value: "integer": spec.items[0].k in body must be of type string: "integer"`,
			`spec.items[1].k: Required value`}},
		{name: "set duplicates", obj: `{"spec":{"x":"a","set":["a","b","a","a","b"]}}`, want: []string{
			`spec.set[2]: Duplicate value: "a"`, `spec.set[4]: Duplicate value: "b"`}},
		{name: "set of objects", obj: `{"spec":{"x":"a","objset":[{"a":1},{"a":2},{"a":1}]}}`, want: []string{
			`spec.objset[2]: Duplicate value: {"a":1}`}},
		{name: "map duplicates", obj: `{"spec":{"x":"a","ports":[{"port":1,"name":"a"},{"port":1,"name":"b"}]}}`, want: []string{
			`spec.ports[1]: Duplicate value: {"port":1}`}},
		{name: "map with two keys", obj: `{"spec":{"x":"a","pairs":[{"port":1,"protocol":"TCP"},{"port":1,"protocol":"UDP"},{"port":1,"protocol":"TCP"}]}}`, want: []string{
			`spec.pairs[2]: Duplicate value: {"port":1,"protocol":"TCP"}`}},
		{name: "map element not an object", obj: `{"spec":{"x":"a","ports":[{"port":1},"x"]}}`, want: []string{
			`spec.ports[1]: Invalid value: "string": spec.ports[1] in body must be of type object: "string"`,
			`spec.ports[1]: Invalid value: "x": must be an object for an array of list-type map`}},
		{name: "embedded resource without apiVersion and kind", obj: `{"spec":{"x":"a","template":{}}}`, want: []string{
			`spec.template.apiVersion: Required value`, `spec.template.kind: Required value`}},
		{name: "embedded resource bad kind and metadata", obj: `{"spec":{"x":"a","template":{"apiVersion":"a/b/c","kind":"no_such","metadata":{"name":"a/b"}}}}`, want: []string{
			`spec.template.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c`,
			`spec.template.kind: Invalid value: "no_such": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`,
			`spec.template.metadata.name: Invalid value: "a/b": may not contain '/'`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for decoder, decode := range map[string]func(testing.TB, string) map[string]any{"sigs.k8s.io/json": object, "encoding/json": objectStd} {
				got := messages(v.Validate(nil, decode(t, tt.obj)))
				sort.Strings(got)
				want := append([]string(nil), tt.want...)
				sort.Strings(want)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s: Validate() (-want +got):\n%s", decoder, diff)
				}
			}
		})
	}
}

func TestValidatorPath(t *testing.T) {
	v, err := NewValidator(props(t, `{type: object, properties: {a: {type: string}}}`))
	if err != nil {
		t.Fatal(err)
	}
	got := messages(v.Validate(field.NewPath("root"), object(t, `{"a":1}`)))
	want := []string{`root.a: Invalid value: "integer": a in body must be of type string: "integer"`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestValidatorConcurrent(t *testing.T) {
	v, err := NewValidator(props(t, validatorSchema))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				errs := v.Validate(nil, object(t, `{"spec":{"replicas":"x","set":["a","a"]}}`))
				if len(errs) != 3 {
					t.Errorf("got %d errors, want 3: %v", len(errs), errs)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestNewValidatorNil(t *testing.T) {
	v, err := NewValidator(nil)
	if err != nil {
		t.Fatal(err)
	}
	if errs := v.Validate(nil, map[string]any{"a": 1}); errs != nil {
		t.Errorf("nil schema: got %v", errs)
	}
	v, err = NewValidator(props(t, `{type: object, required: [spec]}`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"spec: Required value"}, messages(v.Validate(nil, nil))); diff != "" {
		t.Errorf("nil object (-want +got):\n%s", diff)
	}
}
