package celrules

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidateRatcheting(t *testing.T) {
	schema := `
type: object
properties:
  kind:
    type: string
    x-kubernetes-validations: [{rule: "self == 'Widget'"}]
  metadata:
    type: object
  spec:
    type: object
    x-kubernetes-validations:
    - rule: self.replicas < 5
      message: at most 4 replicas
    - rule: self.generation > oldSelf.generation
      message: generation must grow
    properties:
      replicas: {type: integer}
      generation: {type: integer}
      hosts:
        type: array
        items:
          type: string
          x-kubernetes-validations: [{rule: "self.endsWith('.example.com')", message: hosts must be under example.com}]
      ports:
        type: array
        x-kubernetes-list-type: map
        x-kubernetes-list-map-keys: [name]
        items:
          type: object
          required: [name]
          properties:
            name: {type: string}
            port: {type: integer}
          x-kubernetes-validations: [{rule: self.port > 1024, message: privileged port}]
`
	tests := []struct {
		name         string
		obj, old     string
		wantErrs     []string
		wantWarnings []string
	}{
		{
			name: "unchanged invalid values are warnings",
			obj:  `{kind: Widget, metadata: {labels: {new: label}}, spec: {replicas: 7, generation: 2, hosts: [a.other.com], ports: [{name: b, port: 443}, {name: a, port: 80}]}}`,
			old:  `{kind: Widget, metadata: {}, spec: {replicas: 7, generation: 1, hosts: [a.other.com], ports: [{name: a, port: 80}, {name: b, port: 443}]}}`,
			// spec changed (generation), so its own rule is not ratcheted
			wantErrs: []string{"spec: Invalid value: at most 4 replicas"},
			wantWarnings: []string{
				`spec.hosts[0]: Invalid value: "a.other.com": hosts must be under example.com`,
				"spec.ports[0]: Invalid value: privileged port",
				"spec.ports[1]: Invalid value: privileged port",
			},
		},
		{
			name: "changed values are errors",
			obj:  `{kind: Widget, spec: {replicas: 1, generation: 2, hosts: [a.other.com, b.example.com], ports: [{name: a, port: 81}]}}`,
			old:  `{kind: Widget, spec: {replicas: 1, generation: 1, hosts: [a.other.com], ports: [{name: a, port: 80}]}}`,
			wantErrs: []string{
				`spec.hosts[0]: Invalid value: "a.other.com": hosts must be under example.com`,
				"spec.ports[0]: Invalid value: privileged port",
			},
		},
		{
			name:         "a whole unchanged object ratchets, but transition rules and the kind never do",
			obj:          `{kind: Gadget, spec: {replicas: 7, generation: 1}}`,
			old:          `{kind: Gadget, spec: {replicas: 7, generation: 1}}`,
			wantErrs:     []string{`kind: Invalid value: "Gadget": failed rule: self == 'Widget'`, "spec: Invalid value: generation must grow"},
			wantWarnings: []string{"spec: Invalid value: at most 4 replicas"},
		},
	}
	v, err := NewValidator(mustSchema(t, schema))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, old := mustObject(t, tt.obj), mustObject(t, tt.old)
			errs, warnings := v.ValidateRatcheting(context.Background(), nil, obj, old)
			if diff := cmp.Diff(tt.wantErrs, errorStrings(errs)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantWarnings, warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			// without ratcheting, every warning is an error
			all := errorStrings(v.Validate(context.Background(), nil, obj, old))
			if len(all) != len(tt.wantErrs)+len(tt.wantWarnings) {
				t.Errorf("Validate returned %d errors, want %d: %v", len(all), len(tt.wantErrs)+len(tt.wantWarnings), all)
			}
		})
	}
}

// TestRatchetingCorrelation follows kube-apiserver's ratcheting through
// lists: items of atomic and set lists ratchet when the whole list is
// unchanged, items of map lists when their own item is.
func TestRatchetingCorrelation(t *testing.T) {
	tests := []struct {
		name         string
		schema       string
		obj, old     string
		wantErrs     []string
		wantWarnings []string
	}{
		{
			name: "atomic list unchanged",
			schema: `
type: array
items:
  type: number
  x-kubernetes-validations: [{rule: int(self) % 2 == 1, message: gotta be odd}]`,
			obj: `[1, 2]`, old: `[1, 2]`,
			wantWarnings: []string{"root[1]: Invalid value: 2: gotta be odd"},
		},
		{
			name: "atomic list changed",
			schema: `
type: array
items:
  type: number
  x-kubernetes-validations: [{rule: int(self) % 2 == 1, message: gotta be odd}]`,
			obj: `[1, 2, 3]`, old: `[1, 2]`,
			wantErrs: []string{"root[1]: Invalid value: 2: gotta be odd"},
		},
		{
			name: "set unchanged while a sibling changed",
			schema: `
type: object
properties:
  stringField: {type: string}
  setArray:
    type: array
    x-kubernetes-list-type: set
    items:
      type: number
      x-kubernetes-validations: [{rule: int(self) % 2 == 1, message: gotta be odd}]`,
			obj: `{stringField: changed but ratcheted, setArray: [1, 3, 2]}`, old: `{stringField: foo, setArray: [1, 3, 2]}`,
			wantWarnings: []string{"root.setArray[2]: Invalid value: 2: gotta be odd"},
		},
		{
			name: "map list items correlate by key",
			schema: `
type: array
x-kubernetes-list-type: map
x-kubernetes-list-map-keys: [key]
items:
  type: object
  properties:
    key: {type: string}
    value:
      type: string
      x-kubernetes-validations: [{rule: self == "baz", message: gotta be baz}]`,
			obj:          `[{key: foo, value: baz}, {key: bar, value: notbaz}, {key: new, value: notbaz}]`,
			old:          `[{key: foo, value: notbaz}, {key: bar, value: notbaz}]`,
			wantErrs:     []string{`root[2].value: Invalid value: "notbaz": gotta be baz`},
			wantWarnings: []string{`root[1].value: Invalid value: "notbaz": gotta be baz`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := NewValidator(mustSchema(t, tt.schema))
			if err != nil {
				t.Fatal(err)
			}
			errs, warnings := v.ValidateRatcheting(context.Background(), field.NewPath("root"), mustObject(t, tt.obj), mustObject(t, tt.old))
			if diff := cmp.Diff(tt.wantErrs, errorStrings(errs)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantWarnings, warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}
