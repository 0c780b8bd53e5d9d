package celrules_test

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/kplane/kplane/pkg/apiextensions/celrules"
)

const widgetSchema = `
type: object
properties:
  spec:
    type: object
    x-kubernetes-validations:
    - rule: self.replicas <= self.maxReplicas
      message: replicas must not exceed maxReplicas
    properties:
      replicas: {type: integer}
      maxReplicas: {type: integer}
      class:
        type: string
        x-kubernetes-validations:
        - rule: self == oldSelf
          message: class is immutable
`

func ExampleNewValidator() {
	var s apiextensionsv1.JSONSchemaProps
	if err := yaml.Unmarshal([]byte(widgetSchema), &s); err != nil {
		panic(err)
	}
	v, err := celrules.NewValidator(&s)
	if err != nil {
		panic(err)
	}
	old := map[string]any{"spec": map[string]any{"replicas": int64(1), "maxReplicas": int64(3), "class": "gold"}}
	obj := map[string]any{"spec": map[string]any{"replicas": int64(5), "maxReplicas": int64(3), "class": "silver"}}
	for _, e := range v.Validate(context.Background(), nil, obj, old) {
		fmt.Println(e)
	}
	// Output:
	// spec: Invalid value: replicas must not exceed maxReplicas
	// spec.class: Invalid value: "silver": class is immutable
}

func ExampleValidateRules() {
	var s apiextensionsv1.JSONSchemaProps
	if err := yaml.Unmarshal([]byte(`
type: object
properties:
  spec:
    type: object
    properties:
      replicas: {type: integer}
    x-kubernetes-validations:
    - rule: self.replicas >= 0
      reason: FieldValueBogus
`), &s); err != nil {
		panic(err)
	}
	fldPath := field.NewPath("spec", "versions").Index(0).Child("schema", "openAPIV3Schema")
	for _, e := range celrules.ValidateRules(fldPath, &s) {
		fmt.Println(e)
	}
	// Output:
	// spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].reason: Unsupported value: "FieldValueBogus": supported values: "FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"
}
