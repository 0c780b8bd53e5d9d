package celrules

import (
	"context"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestMessageExpressionBudget follows how kube-apiserver charges and
// falls back for messageExpressions of a failing rule, including the budget
// left afterwards (the budgets of the static, concatenation, failing and
// out-of-budget cases are kube-apiserver's recorded values).
func TestMessageExpressionBudget(t *testing.T) {
	tests := []struct {
		name              string
		message           string
		messageExpression string
		budget            int64
		want              string
		wantBudget        int64
	}{
		{name: "static message costs nothing", messageExpression: `"static string"`, budget: 300,
			want: "root: Invalid value: static string", wantBudget: 300},
		{name: "messageExpression wins over message", message: "invisible", messageExpression: `"this is messageExpression"`, budget: 300,
			want: "root: Invalid value: this is messageExpression", wantBudget: 300},
		{name: "an empty result falls back to the rule", messageExpression: `string(true) == "true" ? "" : "x"`, budget: 300,
			want: "root: Invalid value: failed rule: false", wantBudget: 299},
		{name: "running out of budget in the message", messageExpression: `"string 1" + "string 2" + "string 3"`, budget: 1,
			want: `root: Invalid value: "object": messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run`, wantBudget: -1},
		{name: "concatenation is charged", messageExpression: `"str1 " + self.str`, budget: 50,
			want: "root: Invalid value: str1 a string", wantBudget: 46},
		{name: "a failing message keeps its cost and falls back to message", message: "message not messageExpression",
			messageExpression: `"str1 " + ["a", "b", "c", "d"][4]`, budget: 50,
			want: "root: Invalid value: message not messageExpression", wantBudget: 47},
		{name: "line breaks fall back", message: "message not messageExpression", messageExpression: `"str with \na newline"`, budget: 300,
			want: "root: Invalid value: message not messageExpression", wantBudget: 300},
		{name: "too long falls back", message: "message not messageExpression", messageExpression: `"` + strings.Repeat("a", 5121) + `"`, budget: 300,
			want: "root: Invalid value: message not messageExpression", wantBudget: 300},
		{name: "blank falls back", message: "message not messageExpression", messageExpression: `string("     ")`, budget: 300,
			want: "root: Invalid value: message not messageExpression", wantBudget: 300}, // a constant, folded
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustSchema(t, `{type: object, properties: {str: {type: string}}}`)
			s.XValidations = apiextensionsv1.ValidationRules{{Rule: "false", Message: tt.message, MessageExpression: tt.messageExpression}}
			v, err := NewValidator(s)
			if err != nil {
				t.Fatal(err)
			}
			r := &run{budget: tt.budget}
			errs := v.root.validate(context.Background(), r, field.NewPath("root"), map[string]any{"str": "a string"}, nil, ratchet{})
			if len(errs) != 1 || errs[0].Error() != tt.want {
				t.Errorf("errors %v, want %q", errorStrings(errs), tt.want)
			}
			if r.budget != tt.wantBudget {
				t.Errorf("budget left %d, want %d", r.budget, tt.wantBudget)
			}
		})
	}
}
