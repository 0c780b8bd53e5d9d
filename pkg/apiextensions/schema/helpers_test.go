package schema

import (
	"encoding/json"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// props parses a schema written in YAML.
func props(tb testing.TB, y string) *apiextensionsv1.JSONSchemaProps {
	tb.Helper()
	s := &apiextensionsv1.JSONSchemaProps{}
	if err := yaml.UnmarshalStrict([]byte(y), s); err != nil {
		tb.Fatalf("bad schema: %v\n%s", err, y)
	}
	return s
}

// structural parses a schema written in YAML into its structural form.
func structural(tb testing.TB, y string) *Structural {
	tb.Helper()
	s, err := NewStructural(props(tb, y))
	if err != nil {
		tb.Fatalf("NewStructural: %v", err)
	}
	return s
}

// object decodes JSON as the API server does (integers as int64).
func object(tb testing.TB, j string) map[string]any {
	tb.Helper()
	var m map[string]any
	if err := kjson.UnmarshalCaseSensitivePreserveInts([]byte(j), &m); err != nil {
		tb.Fatalf("bad object: %v\n%s", err, j)
	}
	return m
}

// objectStd decodes JSON with encoding/json (every number a float64).
func objectStd(tb testing.TB, j string) map[string]any {
	tb.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(j), &m); err != nil {
		tb.Fatalf("bad object: %v\n%s", err, j)
	}
	return m
}

// messages renders errors the way they appear in a Status.
func messages(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

func schemaPathFor(i int) *field.Path {
	return field.NewPath("spec", "versions").Index(i).Child("schema", "openAPIV3Schema")
}
