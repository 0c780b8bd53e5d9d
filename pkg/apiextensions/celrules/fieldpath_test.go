package celrules

import (
	"testing"
)

func TestValidFieldPath(t *testing.T) {
	s := mustSchema(t, `
type: object
properties:
  spec:
    type: object
    properties:
      a.b: {type: string}
      it's: {type: string}
      labels: {type: object, additionalProperties: {type: string}}
      list: {type: array, items: {type: string}}
`)
	tests := []struct {
		path    string
		want    string
		wantErr string
	}{
		{path: ".spec", want: "spec"},
		{path: ".spec.labels", want: "spec.labels"},
		{path: ".spec.labels.app", want: "spec.labels[app]"},
		{path: ".spec.labels['app.kubernetes.io/name']", want: "spec.labels[app.kubernetes.io/name]"},
		{path: "['spec']['a.b']", want: "spec.a.b"},
		{path: `.spec['it\'s']`, want: "spec.it's"},
		{path: "spec", wantErr: "expected [ or . but got: spec"},
		{path: ".nope", wantErr: "does not refer to a valid field"},
		{path: ".spec.list.x", wantErr: "does not refer to a valid field"},
		{path: ".spec.list[0]", wantErr: "expected single quoted string but got 0"},
		{path: ".spec[", wantErr: "unexpected end of JSON path"},
		{path: ".spec['labels'", wantErr: "unexpected end of JSON path"},
		{path: ".spec['labels'.", wantErr: "expected ] but got ."},
		{path: `.spec['\q']`, wantErr: `invalid string literal: invalid escape char \q`},
		{path: ".", wantErr: "unexpected end of JSON path"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			p, _, err := validFieldPath(tt.path, s)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("got %v, %v; want error %q", p, err, tt.wantErr)
				}
				return
			}
			if err != nil || p.String() != tt.want {
				t.Fatalf("got %v, %v; want %q", p, err, tt.want)
			}
		})
	}
}

// FuzzValidFieldPath checks that parsing arbitrary paths never panics and
// gives the same answer twice.
func FuzzValidFieldPath(f *testing.F) {
	for _, p := range []string{".spec", ".spec.labels['a']", "['spec']", `.spec['it\'s']`, ".spec[", "[]", "''", ".spec.list[0]"} {
		f.Add(p)
	}
	s := mustSchema(f, `
type: object
properties:
  spec:
    type: object
    properties:
      labels: {type: object, additionalProperties: {type: string}}
      list: {type: array, items: {type: object, properties: {name: {type: string}}}}
`)
	f.Fuzz(func(t *testing.T, path string) {
		p1, _, err1 := validFieldPath(path, s)
		p2, _, err2 := validFieldPath(path, s)
		if (err1 == nil) != (err2 == nil) || (err1 == nil && p1.String() != p2.String()) {
			t.Fatalf("%q parsed differently: %v %v / %v %v", path, p1, err1, p2, err2)
		}
	})
}
