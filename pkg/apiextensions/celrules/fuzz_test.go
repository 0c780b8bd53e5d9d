package celrules

import (
	"context"
	"testing"
)

// fuzzSchema exercises every kind of node and rule Validate handles.
const fuzzSchema = `
type: object
x-kubernetes-validations:
- rule: "!has(self.spec) || self.metadata.name.size() < 64"
properties:
  spec:
    type: object
    x-kubernetes-validations:
    - rule: "!has(self.replicas) || !has(self.maxReplicas) || self.replicas <= self.maxReplicas"
      messageExpression: "'replicas ' + string(self.replicas)"
    - rule: "!has(oldSelf.mode) || self.mode == oldSelf.mode"
    - rule: "oldSelf.hasValue() || !has(self.size) || sign(quantity(self.size)) >= 0"
      optionalOldSelf: true
    - rule: "!has(self.endpoint) || (isURL(self.endpoint) && url(self.endpoint).getHost() != '')"
      fieldPath: .endpoint
      reason: FieldValueForbidden
    properties:
      replicas: {type: integer}
      maxReplicas: {type: integer}
      ratio: {type: number, x-kubernetes-validations: [{rule: "self >= 0.0"}]}
      mode: {type: string}
      size: {type: string}
      endpoint: {type: string}
      when: {type: string, format: date-time, x-kubernetes-validations: [{rule: "self > timestamp('2000-01-01T00:00:00Z')"}]}
      data: {type: string, format: byte, x-kubernetes-validations: [{rule: "size(self) < 100"}]}
      port:
        x-kubernetes-int-or-string: true
        x-kubernetes-validations:
        - rule: "type(self) == int ? self < 65536 : self.matches('^[0-9]+%$')"
      labels:
        type: object
        additionalProperties:
          type: string
          x-kubernetes-validations: [{rule: "self == oldSelf", message: immutable}]
      tags:
        type: array
        x-kubernetes-list-type: set
        items: {type: string}
        x-kubernetes-validations: [{rule: "self.all(t, t.size() > 0)"}]
      listeners:
        type: array
        x-kubernetes-list-type: map
        x-kubernetes-list-map-keys: [name]
        items:
          type: object
          properties:
            name: {type: string}
            port: {type: integer}
            cidr: {type: string}
          x-kubernetes-validations:
          - rule: "!has(self.port) || !has(oldSelf.port) || self.port == oldSelf.port"
          - rule: "!has(self.cidr) || !isCIDR(self.cidr) || cidr(self.cidr).prefixLength() > 0"
        x-kubernetes-validations:
        - rule: "self.all(a, self.exists_one(b, has(a.name) && has(b.name) && a.name == b.name))"
      template:
        type: object
        x-kubernetes-embedded-resource: true
        x-kubernetes-preserve-unknown-fields: true
        x-kubernetes-validations: [{rule: "self.kind != ''"}]
`

// FuzzValidate checks that evaluation never panics, whatever the objects
// hold: wrong types, nulls, missing keys, duplicates.
func FuzzValidate(f *testing.F) {
	for _, seed := range [][2]string{
		{`{"metadata":{"name":"a"},"spec":{"replicas":3,"maxReplicas":2,"mode":"x","size":"1Gi"}}`, ``},
		{`{"spec":{"replicas":"3","ratio":1,"when":"not a time","data":"!!","port":"50%"}}`, `{"spec":{"mode":1}}`},
		{`{"spec":{"labels":{"a":"b"},"tags":["a",""],"listeners":[{"name":"a","port":1},{"name":"a"},{"port":2},3]}}`,
			`{"spec":{"labels":{"a":"c"},"listeners":[{"name":"a","port":2}]}}`},
		{`{"spec":{"template":{"kind":"Pod","metadata":{"name":null}},"endpoint":"example.com","listeners":[{"cidr":"10.0.0.0/8"}]}}`, `{"spec":null}`},
		{`{"spec":{"listeners":{"name":"a"},"tags":"x","labels":[1],"port":1.5,"when":"2024-01-01T00:00:00Z"}}`, `[]`},
		{`null`, `{}`},
	} {
		f.Add(seed[0], seed[1])
	}
	s := mustSchema(f, fuzzSchema)
	if errs := ValidateRules(schemaPath, s); len(errs) > 0 {
		// the schema is fine but for cost; unbounded lists are the point
		for _, e := range errs {
			if e.Type != "FieldValueForbidden" {
				f.Fatalf("fuzz schema rejected: %v", e)
			}
		}
	}
	v, err := NewValidator(s)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, objJSON, oldJSON string) {
		obj, err := decodeJSON([]byte(objJSON))
		if err != nil {
			return
		}
		var old any
		if oldJSON != "" {
			if old, err = decodeJSON([]byte(oldJSON)); err != nil {
				return
			}
		}
		_ = v.Validate(context.Background(), nil, obj, old)
		_, _ = v.ValidateRatcheting(context.Background(), nil, obj, old)
	})
}
