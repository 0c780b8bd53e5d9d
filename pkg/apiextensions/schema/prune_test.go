package schema

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

const pruneSchema = `
type: object
properties:
  spec:
    type: object
    properties:
      a: {type: string}
      nested:
        type: object
        properties:
          b: {type: integer}
      items:
        type: array
        items:
          type: object
          properties: {bar: {type: string}}
      labels:
        type: object
        additionalProperties: {type: string}
      structs:
        type: object
        additionalProperties:
          type: object
          properties: {keep: {type: string}}
      free:
        type: object
        additionalProperties: true
      preserved:
        type: object
        x-kubernetes-preserve-unknown-fields: true
        properties:
          typed:
            type: object
            properties: {x: {type: string}}
      template:
        type: object
        x-kubernetes-embedded-resource: true
        properties:
          spec:
            type: object
            properties: {c: {type: string}}
      raw:
        type: object
        x-kubernetes-embedded-resource: true
        x-kubernetes-preserve-unknown-fields: true
      notnull: {type: string}
      nullok: {type: string, nullable: true}
      defaulted: {type: string, default: "d"}
  status:
    type: object
    x-kubernetes-preserve-unknown-fields: true
`

func TestPrune(t *testing.T) {
	s := structural(t, pruneSchema)
	tests := []struct {
		name   string
		root   bool
		in     string
		want   string
		pruned []string
	}{
		{
			name: "root meta kept and reduced to ObjectMeta, unknown root field pruned",
			root: true,
			in:   `{"apiVersion":"g/v1","kind":"K","metadata":{"name":"n","generation":2,"labels":{"a":"b"},"anything":1},"spec":{"a":"x"},"extra":1}`,
			want: `{"apiVersion":"g/v1","kind":"K","metadata":{"name":"n","generation":2,"labels":{"a":"b"}},"spec":{"a":"x"}}`, pruned: []string{"extra", "metadata.anything"},
		},
		{
			name: "malformed root metadata fields dropped silently",
			root: true,
			in:   `{"metadata":{"name":"n","labels":"x","annotations":{"a":1}}}`,
			want: `{"metadata":{"name":"n"}}`,
		},
		{
			name: "root metadata that is not an object left for validation",
			root: true,
			in:   `{"metadata":"x"}`,
			want: `{"metadata":"x"}`,
		},
		{
			name: "root meta pruned silently when not a resource root",
			in:   `{"apiVersion":"g/v1","kind":"K","metadata":{},"spec":{}}`,
			want: `{"spec":{}}`,
		},
		{
			name: "nested", root: true,
			in:   `{"spec":{"a":"x","foo":1,"nested":{"b":1,"c":{"d":1}}}}`,
			want: `{"spec":{"a":"x","nested":{"b":1}}}`, pruned: []string{"spec.foo", "spec.nested.c"},
		},
		{
			name: "arrays", root: true,
			in:   `{"spec":{"items":[{"bar":"x","baz":1},{"qux":{}}]}}`,
			want: `{"spec":{"items":[{"bar":"x"},{}]}}`, pruned: []string{"spec.items[0].baz", "spec.items[1].qux"},
		},
		{
			name: "additionalProperties", root: true,
			in: `{"spec":{"labels":{"a":"1","b":"2"},"structs":{"one":{"keep":"k","drop":1}},"free":{"any":{"thing":[1]},"n":1}}}`,
			// additionalProperties: true specifies the keys, not what is inside
			// their values: as in Kubernetes, objects there are emptied.
			want:   `{"spec":{"labels":{"a":"1","b":"2"},"structs":{"one":{"keep":"k"}},"free":{"any":{},"n":1}}}`,
			pruned: []string{"spec.free.any.thing", "spec.structs.one.drop"},
		},
		{
			name: "preserve-unknown-fields keeps unknown, prunes below specified", root: true,
			in:     `{"spec":{"preserved":{"x":{"y":1},"typed":{"x":"1","z":2}}},"status":{"whatever":[{"a":1}]}}`,
			want:   `{"spec":{"preserved":{"x":{"y":1},"typed":{"x":"1"}}},"status":{"whatever":[{"a":1}]}}`,
			pruned: []string{"spec.preserved.typed.z"},
		},
		{
			name: "embedded resource keeps apiVersion and kind, prunes metadata to ObjectMeta", root: true,
			in:     `{"spec":{"template":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"b"},"bogus":1},"spec":{"c":"x","d":1},"other":1}}}`,
			want:   `{"spec":{"template":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"b"}},"spec":{"c":"x"}}}}`,
			pruned: []string{"spec.template.metadata.bogus", "spec.template.other", "spec.template.spec.d"},
		},
		{
			name: "embedded preserved resource drops malformed metadata", root: true,
			in:   `{"spec":{"raw":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":"notamap"},"spec":{"x":1}}}}`,
			want: `{"spec":{"raw":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"x":1}}}}`,
		},
		{
			name: "non-nullable nulls without default removed, others kept", root: true,
			in:   `{"spec":{"notnull":null,"nullok":null,"defaulted":null}}`,
			want: `{"spec":{"nullok":null,"defaulted":null}}`,
		},
		{
			name: "unknown array of objects", root: true,
			in:   `{"spec":{"gone":[{"a":1}]}}`,
			want: `{"spec":{}}`, pruned: []string{"spec.gone"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := object(t, tt.in)
			pruned := Prune(obj, s, tt.root)
			if diff := cmp.Diff(object(t, tt.want), obj); diff != "" {
				t.Errorf("object (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.pruned, pruned); diff != "" {
				t.Errorf("pruned paths (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPruneNilSchema(t *testing.T) {
	obj := object(t, `{"apiVersion":"v1","kind":"K","metadata":{"name":"a"},"spec":{"x":1}}`)
	got := Prune(obj, nil, true)
	if diff := cmp.Diff([]string{"spec"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(object(t, `{"apiVersion":"v1","kind":"K","metadata":{"name":"a"}}`), obj); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestPrunePreserveNesting checks how x-kubernetes-preserve-unknown-fields
// combines with specified fields below it: preserving never propagates
// into specified properties nor into additionalProperties schemas.
func TestPrunePreserveNesting(t *testing.T) {
	s := structural(t, `
type: object
x-kubernetes-preserve-unknown-fields: true
properties:
  alpha: {type: string}
  strict:
    type: object
    properties:
      open: {type: object, x-kubernetes-preserve-unknown-fields: true}
      closed: {type: object}
  open:
    type: object
    x-kubernetes-preserve-unknown-fields: true
    properties:
      open: {type: object, x-kubernetes-preserve-unknown-fields: true}
      anything: {x-kubernetes-preserve-unknown-fields: true}
      closed: {type: object}
  openMap:
    type: object
    x-kubernetes-preserve-unknown-fields: true
    additionalProperties:
      type: object
      properties: {specified: {type: object}}
  closedMap:
    type: object
    additionalProperties:
      type: object
      properties: {specified: {type: object}}
`)
	obj := object(t, `{
	  "unspecified": "bar", "alpha": "abc", "unspecifiedObject": {"u": 1},
	  "strict": {"u": 1, "uo": {"u": 1}, "closed": {"u": 1}, "apiVersion": "x", "open": {"u": 1}},
	  "open": {"u": 1, "uo": {"u": 1}, "closed": {"u": 1}, "open": {"u": 1}, "anything": [{"a": true}, 1]},
	  "openMap": {"k": {"specified": {"u": 1}, "u": 1}},
	  "closedMap": {"k": {"specified": {"u": 1}, "u": 1}}
	}`)
	pruned := Prune(obj, s, false)
	want := object(t, `{
	  "unspecified": "bar", "alpha": "abc", "unspecifiedObject": {"u": 1},
	  "strict": {"closed": {}, "open": {"u": 1}},
	  "open": {"u": 1, "uo": {"u": 1}, "closed": {}, "open": {"u": 1}, "anything": [{"a": true}, 1]},
	  "openMap": {"k": {"specified": {}}},
	  "closedMap": {"k": {"specified": {}}}
	}`)
	if diff := cmp.Diff(want, obj); diff != "" {
		t.Errorf("object (-want +got):\n%s", diff)
	}
	wantPruned := []string{
		"closedMap.k.specified.u", "closedMap.k.u",
		"open.closed.u",
		"openMap.k.specified.u", "openMap.k.u",
		"strict.apiVersion", "strict.closed.u", "strict.u", "strict.uo",
	}
	if diff := cmp.Diff(wantPruned, pruned); diff != "" {
		t.Errorf("pruned (-want +got):\n%s", diff)
	}
}
