package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func policy(name string) *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{"CREATE", "UPDATE"},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "object.spec.replicas <= 5"}},
		},
	}
}

func TestValidatingAdmissionPolicyValidation(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*admissionregistrationv1.ValidatingAdmissionPolicy)
		want   []string
	}{
		{"valid", func(*admissionregistrationv1.ValidatingAdmissionPolicy) {}, nil},
		{"params need a paramKind", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].Expression = "object.spec.replicas <= params.max"
		}, []string{
			"spec.validations[0].expression: Invalid value: \"object.spec.replicas <= params.max\": compilation failed: ERROR: <input>:1:25: undeclared reference to 'params' (in container '')\n | object.spec.replicas <= params.max\n | ........................^",
		}},
		{"params with a paramKind", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
			p.Spec.Validations[0].Expression = "object.spec.replicas <= int(params.data.max)"
			p.Spec.Variables = []admissionregistrationv1.Variable{{Name: "replicas", Expression: "object.spec.replicas"}}
		}, nil},
		{"nothing to check, no rules", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations = nil
			p.Spec.MatchConstraints.ResourceRules = nil
		}, []string{
			"spec.matchConstraints.resourceRules: Required value",
			"spec.validations: Required value: validations or auditAnnotations must contain at least one item",
			"spec.auditAnnotations: Required value: validations or auditAnnotations must contain at least one item",
		}},
		{"bad validation", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			reason := metav1.StatusReason("Teapot")
			p.Spec.Validations = []admissionregistrationv1.Validation{
				{Expression: "'not a bool'", Message: "line\nbreak", Reason: &reason, MessageExpression: "42"},
				{Expression: " "},
			}
		}, []string{
			`spec.validations[0].expression: Invalid value: "'not a bool'": must evaluate to bool`,
			`spec.validations[0].messageExpression: Invalid value: "42": must evaluate to string`,
			`spec.validations[0].message: Invalid value: "line\nbreak": message must not contain line breaks`,
			`spec.validations[0].reason: Unsupported value: "Teapot": supported values: "Forbidden", "Invalid", "RequestEntityTooLarge", "Unauthorized"`,
			"spec.validations[1].expression: Required value: expression is not specified",
		}},
		{"bad paramKind and variable", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "a/b/c"}
			p.Spec.Variables = []admissionregistrationv1.Variable{{Name: "in", Expression: "1"}}
		}, []string{
			`spec.paramKind.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c`,
			"spec.paramKind.kind: Required value",
			`spec.variables[0].name: Invalid value: "in": name is not a valid CEL identifier`,
		}},
		{"audit annotations", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{
				{Key: "replicas", ValueExpression: "string(object.spec.replicas)"},
				{Key: "replicas", ValueExpression: ""},
			}
		}, []string{
			"spec.auditAnnotations[1].valueExpression: Required value: valueExpression is not specified",
			`spec.auditAnnotations[1].key: Duplicate value: "replicas"`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := policy("max-replicas")
			tc.mutate(p)
			ValidatingAdmissionPolicies().Default(p)
			if d := cmp.Diff(tc.want, errStrings(ValidatingAdmissionPolicies().Validate(p))); d != "" {
				t.Errorf("errors (-want +got):\n%s", d)
			}
		})
	}
}

func TestValidatingAdmissionPolicyDefaultsAndStatus(t *testing.T) {
	st := ValidatingAdmissionPolicies()
	p := policy("p")
	st.Default(p)
	mc := p.Spec.MatchConstraints
	if *p.Spec.FailurePolicy != admissionregistrationv1.Fail || *mc.MatchPolicy != admissionregistrationv1.Equivalent ||
		mc.NamespaceSelector == nil || mc.ObjectSelector == nil || *mc.ResourceRules[0].Scope != "*" {
		t.Errorf("defaults: %+v", p.Spec)
	}
	p.ResourceVersion = "1"
	p.Status.ObservedGeneration = 1
	// A spec write keeps the status, a status write keeps the spec.
	upd := p.DeepCopy()
	upd.Status = admissionregistrationv1.ValidatingAdmissionPolicyStatus{}
	upd.Spec.Validations[0].Expression = "true"
	st.PrepareForUpdate(upd, p)
	if upd.Status.ObservedGeneration != 1 || upd.Generation != p.Generation+1 {
		t.Errorf("spec write: generation %d status %+v", upd.Generation, upd.Status)
	}
	upd = p.DeepCopy()
	upd.Spec.Validations = nil
	upd.Status.TypeChecking = &admissionregistrationv1.TypeChecking{ExpressionWarnings: []admissionregistrationv1.ExpressionWarning{{}}}
	out := st.PrepareForStatusUpdate(upd, p).(*admissionregistrationv1.ValidatingAdmissionPolicy)
	if len(out.Spec.Validations) != 1 {
		t.Errorf("status write changed spec")
	}
	want := []string{
		"status.typeChecking.expressionWarnings[0].warning: Required value",
		"status.typeChecking.expressionWarnings[0].fieldRef: Required value",
	}
	if d := cmp.Diff(want, errStrings(st.ValidateUpdate(out, p))); d != "" {
		t.Errorf("status validation (-want +got):\n%s", d)
	}
}

func TestPolicyBindingValidation(t *testing.T) {
	tests := []struct {
		name string
		spec admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec
		want []string
	}{
		{"valid", admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "p", ValidationActions: []admissionregistrationv1.ValidationAction{"Deny"}}, nil},
		{"empty", admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{}, []string{
			"spec.policyName: Required value",
			"spec.validationActions: Required value: at least one validation action is required",
		}},
		{"actions and paramRef", admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        "p",
			ParamRef:          &admissionregistrationv1.ParamRef{Name: "cfg", Selector: &metav1.LabelSelector{}, ParameterNotFoundAction: ptr(admissionregistrationv1.ParameterNotFoundActionType("Ignore"))},
			ValidationActions: []admissionregistrationv1.ValidationAction{"Deny", "Warn", "Deny", "Log"},
		}, []string{
			"spec.paramRef.name: Forbidden: name and selector are mutually exclusive",
			"spec.paramRef.selector: Forbidden: name and selector are mutually exclusive",
			`spec.paramRef.parameterNotFoundAction: Unsupported value: "Ignore": supported values: "Deny", "Allow"`,
			`spec.validationActions[2]: Duplicate value: "Deny"`,
			`spec.validationActions[3]: Unsupported value: "Log": supported values: "Audit", "Deny", "Warn"`,
			`spec.validationActions: Invalid value: ["Deny","Warn","Deny","Log"]: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)`,
		}},
		{"paramRef without name or selector", admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: "p", ParamRef: &admissionregistrationv1.ParamRef{}, ValidationActions: []admissionregistrationv1.ValidationAction{"Audit"},
		}, []string{"spec.paramRef: Required value: one of name or selector must be specified"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: tc.spec}
			ValidatingAdmissionPolicyBindings().Default(b)
			if d := cmp.Diff(tc.want, errStrings(ValidatingAdmissionPolicyBindings().Validate(b))); d != "" {
				t.Errorf("errors (-want +got):\n%s", d)
			}
		})
	}
}

func TestMutatingAdmissionPolicyValidation(t *testing.T) {
	v := policy("p")
	m := &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: v.Spec.MatchConstraints,
			Mutations: []admissionregistrationv1.Mutation{
				{PatchType: "ApplyConfiguration", ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: "Object{spec: Object.spec{replicas: 1}}"}},
				{PatchType: "JSONPatch"},
				{PatchType: "Merge"},
			},
			ReinvocationPolicy: "Never",
		},
	}
	MutatingAdmissionPolicies().Default(m)
	want := []string{
		"spec.mutations[1].jsonPatch: Required value: jsonPatch field is required when patchType is 'JSONPatch'",
		`spec.mutations[2].patchType: Unsupported value: "Merge": supported values: "ApplyConfiguration", "JSONPatch"`,
	}
	if d := cmp.Diff(want, errStrings(MutatingAdmissionPolicies().Validate(m))); d != "" {
		t.Errorf("errors (-want +got):\n%s", d)
	}
}

func TestMutatingAdmissionPolicySyntax(t *testing.T) {
	errs := parseAdmissionExpression("Object{spec: ", nil)
	if len(errs) != 1 || errs[0].Detail[:len("compilation failed: ERROR")] != "compilation failed: ERROR" {
		t.Errorf("syntax error: %v", errs)
	}
}
