package policy

import (
	"context"
	"fmt"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// BenchmarkValidate measures what policies add to a request: ten policies
// whose rules do not match it, and one that matches with three validations.
func BenchmarkValidate(b *testing.B) {
	podRule := func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
		s.MatchConstraints.ResourceRules[0].APIGroups = []string{""}
		s.MatchConstraints.ResourceRules[0].Resources = []string{"pods"}
	}
	b.Run("10 policies, none matching", func(b *testing.B) {
		objs := []runtime.Object{newNamespace("default", nil)}
		for i := range 10 {
			name := fmt.Sprint("p", i)
			objs = append(objs, newPolicy(name, podRule, replicasAtMost5()), newBinding(name, name, nil))
		}
		benchValidate(b, objs)
	})
	b.Run("1 policy matching, 3 validations", func(b *testing.B) {
		objs := []runtime.Object{newNamespace("default", nil), newPolicy("p", nil,
			replicasAtMost5(),
			admissionregistrationv1.Validation{Expression: "object.metadata.name.startsWith('web')"},
			admissionregistrationv1.Validation{Expression: "!has(object.metadata.labels) || object.metadata.labels.all(k, k.size() < 64)"},
		), newBinding("b", "p", nil)}
		benchValidate(b, objs)
	})
}

func benchValidate(b *testing.B, objs []runtime.Object) {
	src := newFakeSource(objs...)
	p := newPlugin(b, src, nil)
	ctx := context.Background()
	d := newDeployment("web", 3, map[string]string{"app": "web"})
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Validate(ctx, createAttrs(d)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompile measures compiling a policy with two variables, three
// validations and a messageExpression (done once per policy version).
func BenchmarkCompile(b *testing.B) {
	p := newPolicy("p", func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
		s.Variables = []admissionregistrationv1.Variable{{Name: "r", Expression: "object.spec.replicas"}, {Name: "max", Expression: "5"}}
	},
		admissionregistrationv1.Validation{Expression: "variables.r <= variables.max", MessageExpression: "'too many: ' + string(variables.r)"},
		admissionregistrationv1.Validation{Expression: "object.metadata.name.startsWith('web')"},
		admissionregistrationv1.Validation{Expression: "request.operation != 'DELETE'"},
	)
	b.ReportAllocs()
	for b.Loop() {
		if c := compile(&p.Spec); c.err != nil {
			b.Fatal(c.err)
		}
	}
}

// BenchmarkMutate measures a matching MutatingAdmissionPolicy applying a
// JSON patch and an apply configuration to a deployment.
func BenchmarkMutate(b *testing.B) {
	src := newFakeSource(newNamespace("default", nil),
		newMutatingPolicy("p", nil,
			jsonPatch(`[JSONPatch{op: "replace", path: "/spec/replicas", value: 3}]`),
			applyConfiguration(`Object{metadata: Object.metadata{labels: {"team": "blue"}}}`)),
		newMutatingBinding("b", "p", nil))
	p := newMutatingPlugin(b, src, nil)
	ctx := context.Background()
	d := newDeployment("web", 1, map[string]string{"app": "web"})
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Admit(ctx, createAttrs(d)); err != nil {
			b.Fatal(err)
		}
	}
}
