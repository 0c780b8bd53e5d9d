package admission

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

type equivalents []Equivalent

func (e equivalents) ConvertTo(obj runtime.Object, _ schema.GroupVersionKind) (runtime.Object, error) {
	return obj, nil
}

func (e equivalents) EquivalentResources(schema.GroupVersionResource, string) []Equivalent { return e }

func TestRuleMatchesAsKubernetes(t *testing.T) {
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	ns := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	scope := func(s admissionregistrationv1.ScopeType) *admissionregistrationv1.ScopeType { return &s }
	rule := func(res string, sc *admissionregistrationv1.ScopeType) admissionregistrationv1.RuleWithOperations {
		return admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"*"}, Resources: []string{res}, Scope: sc},
		}
	}
	for _, tc := range []struct {
		name string
		rule admissionregistrationv1.RuleWithOperations
		a    *Attributes
		want bool
	}{
		{"resource", rule("pods", nil), &Attributes{Operation: Create, Resource: pods, Namespace: "a"}, true},
		{"a resource rule does not cover its subresources", rule("pods", nil), &Attributes{Operation: Create, Resource: pods, Subresource: "status", Namespace: "a"}, false},
		{"pods/* covers subresources", rule("pods/*", nil), &Attributes{Operation: Create, Resource: pods, Subresource: "status"}, true},
		{"*/status", rule("*/status", nil), &Attributes{Operation: Create, Resource: pods, Subresource: "status"}, true},
		{"*/* covers the resource itself", rule("*/*", nil), &Attributes{Operation: Create, Resource: pods}, true},
		{"other operation", rule("pods", nil), &Attributes{Operation: Update, Resource: pods}, false},
		{"Namespaced scope needs a namespace", rule("*", scope(admissionregistrationv1.NamespacedScope)), &Attributes{Operation: Create, Resource: pods}, false},
		{"a namespace is cluster-scoped though its request has a namespace", rule("*", scope(admissionregistrationv1.ClusterScope)), &Attributes{Operation: Create, Resource: ns, Namespace: "x", Name: "x"}, true},
		{"a namespace is not namespaced", rule("*", scope(admissionregistrationv1.NamespacedScope)), &Attributes{Operation: Create, Resource: ns, Namespace: "x", Name: "x"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RuleMatches(tc.rule, tc.a, tc.a.Resource); got != tc.want {
				t.Fatalf("RuleMatches = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMatchRulesEquivalent(t *testing.T) {
	v2 := schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}
	v1 := schema.GroupVersionResource{Group: "autoscaling", Version: "v1", Resource: "horizontalpodautoscalers"}
	a := &Attributes{Operation: Create, Resource: v2, Kind: schema.GroupVersionKind{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"},
		Objects: equivalents{{Resource: v1, Kind: schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "HorizontalPodAutoscaler"}}}}
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"autoscaling"}, APIVersions: []string{"v1"}, Resources: []string{"horizontalpodautoscalers"}},
	}}
	exact, equivalent := admissionregistrationv1.Exact, admissionregistrationv1.Equivalent
	if _, ok := MatchRules(a, rules, &exact); ok {
		t.Fatal("Exact matched a request made at another version")
	}
	inv, ok := MatchRules(a, rules, &equivalent)
	if !ok || inv.Resource != v1 || inv.Kind.Version != "v1" {
		t.Fatalf("Equivalent = %+v, %v; want the v1 resource and kind", inv, ok)
	}
}
