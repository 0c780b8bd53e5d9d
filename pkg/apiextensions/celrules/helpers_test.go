package celrules

import (
	"bytes"
	"encoding/json"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

func mustSchema(t testing.TB, y string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	var s apiextensionsv1.JSONSchemaProps
	if err := yaml.UnmarshalStrict([]byte(y), &s); err != nil {
		t.Fatalf("schema: %v", err)
	}
	return &s
}

// mustObject decodes YAML or JSON into the values a custom resource decodes
// to: integers as int64, other numbers as float64. Empty input is nil.
func mustObject(t testing.TB, y string) any {
	t.Helper()
	if y == "" {
		return nil
	}
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatalf("object: %v", err)
	}
	v, err := decodeJSON(j)
	if err != nil {
		t.Fatalf("object: %v", err)
	}
	return v
}

func decodeJSON(j []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(j))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return fromNumbers(v), nil
}

func fromNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, _ := v.Float64()
		return f
	case map[string]any:
		for k, e := range v {
			v[k] = fromNumbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = fromNumbers(e)
		}
	}
	return v
}

func errorStrings(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

// schemaPath is where a CRD's first version's schema sits.
var schemaPath = field.NewPath("spec", "versions").Index(0).Child("schema", "openAPIV3Schema")
