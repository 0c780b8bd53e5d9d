package schema

import (
	"encoding/json"
	"testing"

	kjson "sigs.k8s.io/json"
)

const fuzzSchema = `
type: object
properties:
  apiVersion: {type: string}
  kind: {type: string}
  metadata: {type: object}
  spec:
    type: object
    default: {}
    required: [name]
    properties:
      name: {type: string, minLength: 1, maxLength: 8, pattern: "^[a-z]+$", default: "x"}
      replicas: {type: integer, format: int32, minimum: 0, default: 1}
      ratio: {type: number, multipleOf: 0.5, nullable: true}
      port: {x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}]}
      when: {type: string, format: date-time}
      mode: {type: string, enum: [a, b], default: a}
      ports:
        type: array
        x-kubernetes-list-type: map
        x-kubernetes-list-map-keys: [port]
        items:
          type: object
          required: [port]
          properties:
            port: {type: integer}
            protocol: {type: string, default: TCP}
      tags: {type: array, x-kubernetes-list-type: set, maxItems: 4, items: {type: string}}
      labels: {type: object, additionalProperties: {type: string, default: "v"}}
      raw: {x-kubernetes-preserve-unknown-fields: true}
      template:
        type: object
        x-kubernetes-embedded-resource: true
        x-kubernetes-preserve-unknown-fields: true
        properties:
          spec: {type: object, properties: {image: {type: string}}}
      one:
        type: object
        properties: {a: {type: string}, b: {type: string}}
        oneOf: [{required: [a]}, {required: [b]}]
  status:
    type: object
    x-kubernetes-preserve-unknown-fields: true
`

// FuzzPruneDefaultValidate checks that the request path (prune, default,
// validate) never panics on any JSON object, decoded either way, and that
// pruning is idempotent.
func FuzzPruneDefaultValidate(f *testing.F) {
	s := props(f, fuzzSchema)
	ss, err := NewStructural(s)
	if err != nil {
		f.Fatal(err)
	}
	v, err := NewValidator(s)
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		`{}`,
		`{"apiVersion":"g/v1","kind":"K","metadata":{"name":"a"},"spec":{"name":"abc","replicas":3}}`,
		`{"spec":{"ports":[{"port":1},{"port":1},null,"x"],"tags":["a","a",{"x":[1]}],"labels":{"a":null}}}`,
		`{"spec":{"template":{"apiVersion":1,"kind":[],"metadata":{"labels":"x","name":{}}},"raw":{"a":[{"b":null}]}}}`,
		`{"spec":null,"status":[1,2.5,-1e308,true]}`,
		`{"spec":{"replicas":1e30,"ratio":1.5,"port":true,"when":"x","one":{"a":"1","b":"2"}}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var obj map[string]any
		if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &obj); err != nil || obj == nil {
			return
		}
		Prune(obj, ss, true)
		Default(obj, ss)
		v.Validate(nil, obj)
		if again := Prune(obj, ss, true); len(again) != 0 {
			t.Errorf("second prune removed %v", again)
		}
		std := objectStdOrNil(data)
		if std != nil {
			Prune(std, ss, true)
			Default(std, ss)
			v.Validate(nil, std)
		}
	})
}

func objectStdOrNil(data []byte) map[string]any {
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil
	}
	return m
}
