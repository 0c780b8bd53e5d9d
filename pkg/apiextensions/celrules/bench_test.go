package celrules

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkValidate measures an update of a Gateway-like object with 16
// listeners, each checked by item rules, a uniqueness rule over the list and
// transition rules.
func BenchmarkValidate(b *testing.B) {
	s := mustSchema(b, specSchema(`type: object
properties:
  gatewayClassName:
    type: string
    maxLength: 253
    x-kubernetes-validations: [{rule: self == oldSelf, message: field is immutable}]
  listeners:
    type: array
    maxItems: 64
    x-kubernetes-list-type: map
    x-kubernetes-list-map-keys: [name]
    x-kubernetes-validations:
    - rule: self.all(l1, self.exists_one(l2, l1.name == l2.name))
      message: Listener name must be unique within the Gateway
    items:
      type: object
      required: [name]
      properties:
        name: {type: string, maxLength: 253}
        hostname: {type: string, maxLength: 253}
        port: {type: integer}
        protocol: {type: string, maxLength: 255}
      x-kubernetes-validations:
      - rule: "self.protocol in ['HTTP', 'HTTPS'] ? true : !has(self.hostname)"
        message: hostname must not be specified for protocols ['TCP', 'UDP']
      - rule: self.port == oldSelf.port
        message: port is immutable`))
	v, err := NewValidator(s)
	if err != nil {
		b.Fatal(err)
	}
	listeners := make([]any, 16)
	for i := range listeners {
		listeners[i] = map[string]any{"name": fmt.Sprintf("l%d", i), "hostname": "example.com", "port": int64(8000 + i), "protocol": "HTTPS"}
	}
	obj := map[string]any{"spec": map[string]any{"gatewayClassName": "c", "listeners": listeners}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if errs := v.Validate(ctx, nil, obj, obj); len(errs) != 0 {
			b.Fatal(errs)
		}
	}
}
