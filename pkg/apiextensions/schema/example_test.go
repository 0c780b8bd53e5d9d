package schema_test

import (
	"fmt"

	"github.com/kplane/kplane/pkg/apiextensions/schema"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// Example shows the two moments a CRD schema matters: when the CRD is
// written (ValidateStructural, ValidateSchema) and when a custom resource
// arrives (Prune, Default, Validate, in that order).
func Example() {
	var s apiextensionsv1.JSONSchemaProps
	_ = yaml.Unmarshal([]byte(`
type: object
properties:
  spec:
    type: object
    properties:
      replicas: {type: integer, default: 1, minimum: 0}
      mode: {type: string, enum: [fast, safe]}
`), &s)

	p := field.NewPath("spec", "versions").Index(0).Child("schema", "openAPIV3Schema")
	fmt.Println(len(schema.ValidateStructural(p, &s)), len(schema.ValidateSchema(p, &s)))

	ss, _ := schema.NewStructural(&s)
	v, _ := schema.NewValidator(&s)
	obj := map[string]any{
		"apiVersion": "example.com/v1", "kind": "Thing", "metadata": map[string]any{"name": "t"},
		"spec": map[string]any{"mode": "slow", "colour": "red"},
	}
	for _, f := range schema.Prune(obj, ss, true) {
		fmt.Printf("unknown field %q\n", f)
	}
	schema.Default(obj, ss)
	fmt.Println(obj["spec"])
	for _, err := range v.Validate(nil, obj) {
		fmt.Println(err)
	}
	// Output:
	// 0 0
	// unknown field "spec.colour"
	// map[mode:slow replicas:1]
	// spec.mode: Unsupported value: "slow": supported values: "fast", "safe"
}
