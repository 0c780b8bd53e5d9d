package schema

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

func TestToOpenAPI(t *testing.T) {
	in := props(t, `
type: object
nullable: false
properties:
  port: {x-kubernetes-int-or-string: true, format: int32}
  when: {type: string, format: date-time}
  odd: {type: string, format: no-such}
  count: {type: integer, format: int16}
  ratio: {type: number, format: double}
  flag: {type: boolean, format: bool}
  maybe: {type: string, nullable: true, enum: [a, 1]}
  list: {type: array, items: {type: string}, x-kubernetes-list-type: set}
`)
	for _, tt := range []struct {
		name string
		mode openAPIMode
		want map[string]spec.Schema
	}{
		{
			name: "for custom resources",
			mode: forCustomResources,
			want: map[string]spec.Schema{
				"port":  {SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"integer", "string"}}},
				"when":  {SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"string"}, Format: "date-time"}},
				"odd":   {SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"string"}}},
				"count": {SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"integer"}}},
				"ratio": {SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"number"}, Format: "double"}},
				"flag":  {SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"boolean"}}},
				"maybe": {SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"string"}, Nullable: true, Enum: []any{"a", int64(1)}}},
			},
		},
		{
			name: "for defaults",
			mode: forDefaults,
			want: map[string]spec.Schema{
				"port":  {SchemaProps: spec.SchemaProps{Format: "int32"}},
				"when":  {SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"string"}, Format: "date-time"}},
				"odd":   {SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"string"}, Format: "no-such"}},
				"count": {SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"integer"}, Format: "int16"}},
				"ratio": {SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"number"}, Format: "double"}},
				"flag":  {SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"boolean"}, Format: "bool"}},
				"maybe": {SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"string"}, Nullable: true, Enum: []any{"a", int64(1)}}},
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := toOpenAPI(in, tt.mode)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(spec.StringOrArray{"object"}, out.Type); diff != "" {
				t.Errorf("root type (-want +got):\n%s", diff)
			}
			list := out.Properties["list"]
			if got := list.Extensions["x-kubernetes-list-type"]; got != "set" || list.Items == nil || list.Items.Schema == nil {
				t.Errorf("list = %+v", list)
			}
			for k, want := range tt.want {
				got := out.Properties[k]
				if diff := cmp.Diff(want.SchemaProps, got.SchemaProps, cmpopts.IgnoreFields(spec.SchemaProps{}, "Ref")); diff != "" {
					t.Errorf("%s (-want +got):\n%s", k, diff)
				}
			}
			if got := out.Properties["port"].Extensions["x-kubernetes-int-or-string"]; got != true {
				t.Errorf("port lost x-kubernetes-int-or-string: %v", got)
			}
		})
	}
}
