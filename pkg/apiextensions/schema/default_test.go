package schema

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

const defaultSchema = `
type: object
properties:
  spec:
    type: object
    default: {}
    properties:
      replicas: {type: integer, default: 1}
      mode: {type: string, default: "auto"}
      nullable: {type: string, nullable: true, default: "n"}
      obj:
        type: object
        default: {inner: "given"}
        properties:
          inner: {type: string}
          other: {type: string, default: "o"}
      list:
        type: array
        items:
          type: object
          properties:
            port: {type: integer, default: 80}
      strs:
        type: array
        items: {type: string, default: "s"}
      byName:
        type: object
        additionalProperties:
          type: object
          properties:
            weight: {type: integer, default: 5}
      slice: {type: array, items: {type: string}, default: ["a"]}
`

func TestDefault(t *testing.T) {
	s := structural(t, defaultSchema)
	tests := []struct {
		name string
		in   string
		want string
	}{
		{
			name: "missing object gets default then its fields' defaults",
			in:   `{}`,
			want: `{"spec":{"replicas":1,"mode":"auto","nullable":"n","obj":{"inner":"given","other":"o"},"slice":["a"]}}`,
		},
		{
			name: "set values kept",
			in:   `{"spec":{"replicas":3,"mode":"m","nullable":"x","obj":{"inner":"i","other":"x"},"slice":[]}}`,
			want: `{"spec":{"replicas":3,"mode":"m","nullable":"x","obj":{"inner":"i","other":"x"},"slice":[]}}`,
		},
		{
			name: "null in non-nullable field gets default, null in nullable stays",
			in:   `{"spec":{"replicas":null,"nullable":null}}`,
			want: `{"spec":{"replicas":1,"mode":"auto","nullable":null,"obj":{"inner":"given","other":"o"},"slice":["a"]}}`,
		},
		{
			name: "objects in arrays and maps",
			in:   `{"spec":{"list":[{},{"port":8080}],"strs":["x",null],"byName":{"a":{},"b":{"weight":1}}}}`,
			want: `{"spec":{"replicas":1,"mode":"auto","nullable":"n","obj":{"inner":"given","other":"o"},"slice":["a"],"list":[{"port":80},{"port":8080}],"strs":["x","s"],"byName":{"a":{"weight":5},"b":{"weight":1}}}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := object(t, tt.in)
			Default(obj, s)
			if diff := cmp.Diff(object(t, tt.want), obj); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefaultDeepCopies(t *testing.T) {
	s := structural(t, defaultSchema)
	a, b := object(t, `{}`), object(t, `{}`)
	Default(a, s)
	Default(b, s)
	a["spec"].(map[string]any)["slice"].([]any)[0] = "changed"
	a["spec"].(map[string]any)["obj"].(map[string]any)["inner"] = "changed"
	if got := b["spec"].(map[string]any)["slice"].([]any)[0]; got != "a" {
		t.Errorf("defaults share memory: b slice[0] = %v", got)
	}
	if got := s.Properties["spec"].Properties["obj"].Default.(map[string]any)["inner"]; got != "given" {
		t.Errorf("schema default was modified: %v", got)
	}
}

func TestDefaultNulls(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		in     string
		want   string
	}{
		{"zero values are not missing", `{type: object, properties: {l: {type: array, items: {type: object, properties: {a: {x-kubernetes-int-or-string: true, default: "A"}}}}}}`,
			`{"l":[{},{"a":0},{"a":""},{"a":null}]}`, `{"l":[{"a":"A"},{"a":0},{"a":""},{"a":"A"}]}`},
		{"null item of nullable list stays", `{type: object, properties: {l: {type: array, items: {type: string, nullable: true, default: "d"}}}}`,
			`{"l":[null]}`, `{"l":[null]}`},
		{"null item of non-nullable list defaulted", `{type: object, properties: {l: {type: array, items: {type: string, default: "d"}}}}`,
			`{"l":[null]}`, `{"l":["d"]}`},
		{"null in nullable additionalProperties stays", `{type: object, properties: {m: {type: object, additionalProperties: {type: string, nullable: true, default: "d"}}}}`,
			`{"m":{"a":null}}`, `{"m":{"a":null}}`},
		{"null in non-nullable additionalProperties defaulted", `{type: object, properties: {m: {type: object, additionalProperties: {type: string, default: "d"}}}}`,
			`{"m":{"a":null}}`, `{"m":{"a":"d"}}`},
		{"null unknown field untouched", `{type: object, properties: {m: {type: string, default: "d"}}}`,
			`{"m":"x","u":null}`, `{"m":"x","u":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := object(t, tt.in)
			Default(obj, structural(t, tt.schema))
			if diff := cmp.Diff(object(t, tt.want), obj); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
