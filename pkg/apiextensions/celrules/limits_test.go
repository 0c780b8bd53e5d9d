package celrules

import (
	"context"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestValidateCancelled(t *testing.T) {
	s := mustSchema(t, `{type: object, properties: {array: {type: array, items: {type: integer}}}}`)
	s.XValidations = apiextensionsv1.ValidationRules{{Rule: "self.array.map(e, e * 20).filter(e, e > 50).exists(e, e == 60)"}}
	v, err := NewValidator(s)
	if err != nil {
		t.Fatal(err)
	}
	items := make([]any, 1000)
	for i := range items {
		items[i] = int64(i)
	}
	obj := map[string]any{"array": items}
	if errs := v.Validate(context.Background(), nil, obj, nil); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	errs := v.Validate(ctx, nil, obj, nil)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "operation interrupted") {
		t.Fatalf("got %v, want evaluation interrupted", errs)
	}
}

func TestRuleNestingLimit(t *testing.T) {
	s := func(rule string) *apiextensionsv1.JSONSchemaProps {
		s := mustSchema(t, `{type: object, properties: {spec: {type: object, properties: {val1: {type: boolean}}}}}`)
		spec := s.Properties["spec"]
		spec.XValidations = apiextensionsv1.ValidationRules{{Rule: rule}}
		s.Properties["spec"] = spec
		return s
	}
	const depth = 250 // the parser's recursion limit
	ok := strings.Repeat("self.val1 == ", depth-1) + "self.val1"
	if errs := ValidateRules(schemaPath, s(ok)); len(errs) > 0 {
		t.Errorf("nesting %d rejected: %v", depth-1, errs)
	}
	tooDeep := strings.Repeat("self.val1 == ", depth) + "self.val1"
	errs := ValidateRules(schemaPath, s(tooDeep))
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "max recursion depth exceeded") {
		t.Errorf("nesting %d: got %v, want a recursion depth error", depth, errs)
	}
}
