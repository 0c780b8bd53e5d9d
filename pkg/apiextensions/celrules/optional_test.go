package celrules

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
)

// TestOptionalOldSelf covers rules that see oldSelf as an optional, on
// create and update, including chained optional field access.
func TestOptionalOldSelf(t *testing.T) {
	tests := []struct {
		name     string
		schema   string
		rule     string
		obj, old string
		want     []string
	}{
		{name: "create passes without an old value", schema: `{type: object, properties: {foo: {type: string}}}`,
			rule: "self.foo == 'not bar' || !oldSelf.hasValue()", obj: `{foo: bar}`},
		{name: "update fails with an old value", schema: `{type: object, properties: {foo: {type: string}}}`,
			rule: "self.foo == 'valid' || !oldSelf.hasValue()", obj: `{foo: invalid}`, old: `{foo: bar}`,
			want: []string{"spec: Invalid value: failed rule: self.foo == 'valid' || !oldSelf.hasValue()"}},
		{name: "invalid stays allowed when it was invalid", schema: `{type: object, properties: {foo: {type: string}}}`,
			rule: "self.foo == 'valid' || (oldSelf.hasValue() && oldSelf.value().foo != 'valid')", obj: `{foo: invalid again}`, old: `{foo: invalid}`},
		{name: "chained optional field access", schema: `{type: object, properties: {foo: {type: string}}}`,
			rule: "self.foo == 'valid' || oldSelf.foo.orValue('') != 'valid'", obj: `{foo: invalid again}`, old: `{foo: invalid}`},
		{name: "invalid is blocked when it was valid", schema: `{type: object, properties: {foo: {type: string}}}`,
			rule: "self.foo == 'valid' || oldSelf.foo.orValue('') != 'valid'", obj: `{foo: invalid}`, old: `{foo: valid}`,
			want: []string{"spec: Invalid value: failed rule: self.foo == 'valid' || oldSelf.foo.orValue('') != 'valid'"}},
		{name: "create below a new minimum", schema: `{type: integer}`,
			rule: "self >= 10 || (oldSelf.hasValue() && oldSelf.value() <= self)", obj: `9`,
			want: []string{"spec: Invalid value: 9: failed rule: self >= 10 || (oldSelf.hasValue() && oldSelf.value() <= self)"}},
		{name: "update below the minimum but not lower than before", schema: `{type: integer}`,
			rule: "self >= 10 || (oldSelf.hasValue() && oldSelf.value() <= self)", obj: `9`, old: `5`},
		{name: "update lower than before", schema: `{type: integer}`,
			rule: "self >= 10 || (oldSelf.hasValue() && oldSelf.value() <= self)", obj: `4`, old: `5`,
			want: []string{"spec: Invalid value: 4: failed rule: self >= 10 || (oldSelf.hasValue() && oldSelf.value() <= self)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := mustSchema(t, tt.schema)
			spec.XValidations = apiextensionsv1.ValidationRules{{Rule: tt.rule, OptionalOldSelf: ptr.To(true)}}
			s := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": *spec}}
			if errs := ValidateRules(schemaPath, s); len(errs) > 0 {
				t.Fatalf("schema rejected: %v", errs)
			}
			v, err := NewValidator(s)
			if err != nil {
				t.Fatal(err)
			}
			var old any
			if tt.old != "" {
				old = map[string]any{"spec": mustObject(t, tt.old)}
			}
			got := errorStrings(v.Validate(context.Background(), nil, map[string]any{"spec": mustObject(t, tt.obj)}, old))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}
