package cel

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/pkg/admission"
	"github.com/kplane/kplane/pkg/authentication"
	"github.com/kplane/kplane/pkg/authorization"
)

var podsGVR = corev1.SchemeGroupVersion.WithResource("pods")

func podAttrs() *admission.Attributes {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"app": "web"}}}
	return &admission.Attributes{
		Operation: admission.Create,
		Kind:      corev1.SchemeGroupVersion.WithKind("Pod"),
		Resource:  podsGVR,
		Namespace: "ns",
		Name:      "p",
		Object:    pod,
		Options:   &metav1.CreateOptions{FieldManager: "kubectl"},
		User:      &authentication.User{Name: "alice", UID: "1", Groups: []string{"dev"}, Extra: map[string][]string{"scopes": {"a"}}},
	}
}

func match(t *testing.T, authz authorization.Authorizer, conds ...admissionregistrationv1.MatchCondition) (bool, string, error) {
	t.Helper()
	m, err := NewConditionCompiler(authz)(conds)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	a := podAttrs()
	inv := admission.Invocation{Resource: a.Resource, Kind: a.Kind}
	return m.Match(context.Background(), a, a.Object, nil, admission.NewRequest(a, inv))
}

func TestMatchConditionsAsKubernetes(t *testing.T) {
	mc := func(name, expr string) admissionregistrationv1.MatchCondition {
		return admissionregistrationv1.MatchCondition{Name: name, Expression: expr}
	}
	for _, tc := range []struct {
		name       string
		conds      []admissionregistrationv1.MatchCondition
		want       bool
		wantFailed string
		wantErr    string
	}{
		{"no conditions match", nil, true, "", ""},
		{"all true", []admissionregistrationv1.MatchCondition{mc("a", "true"), mc("b", "object.metadata.labels.app == 'web'")}, true, "", ""},
		{"a false one names itself", []admissionregistrationv1.MatchCondition{mc("a", "true"), mc("b", "request.userInfo.username == 'bob'")}, false, "b", ""},
		{"false wins over errors", []admissionregistrationv1.MatchCondition{mc("a", "object.spec.missing == 1"), mc("b", "false")}, false, "b", ""},
		{"an error without false", []admissionregistrationv1.MatchCondition{mc("a", "object.spec.missing == 1"), mc("b", "true")}, false, "",
			"expression 'object.spec.missing == 1' resulted in error: no such key: missing"},
		{"errors aggregate", []admissionregistrationv1.MatchCondition{mc("a", "object.x == 1"), mc("b", "object.y == 1")}, false, "",
			"[expression 'object.x == 1' resulted in error: no such key: x, expression 'object.y == 1' resulted in error: no such key: y]"},
		{"request fields", []admissionregistrationv1.MatchCondition{mc("a",
			"request.operation == 'CREATE' && request.kind.version == 'v1' && request.requestResource.resource == 'pods' && request.userInfo.uid == '1' && request.userInfo.extra.scopes == ['a'] && request.options.fieldManager == 'kubectl' && request.options.kind == 'CreateOptions' && request.options.apiVersion == 'meta.k8s.io/v1' && request.dryRun == false && !has(request.subResource) && request.name == 'p'")},
			true, "", ""},
		{"namespaceObject is null for webhooks, oldObject on create", []admissionregistrationv1.MatchCondition{mc("a", "namespaceObject == null && oldObject == null")}, true, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, failed, err := match(t, nil, tc.conds...)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want || failed != tc.wantFailed {
				t.Fatalf("Match = %v, %q, %v; want %v, %q", got, failed, err, tc.want, tc.wantFailed)
			}
		})
	}
}

func TestMatchConditionCompileErrors(t *testing.T) {
	for _, tc := range []struct{ expr, want string }{
		{"undeclared", "compilation failed: ERROR: <input>:1:1: undeclared reference to 'undeclared'"},
		{"'a string'", "must evaluate to bool but got string"},
		{"object.spec", "must evaluate to bool but got dyn"},
		{"params.x", "undeclared reference to 'params'"},
		{"request.userinfo.username == 'a'", "undefined field 'userinfo'"},
		{"request.uid == ''", "undefined field 'uid'"},
		{"has(namespaceObject.metadata.managedFields)", "undefined field 'managedFields'"},
		{"variables.x", "undeclared reference to 'variables'"},
	} {
		_, err := NewConditionCompiler(nil)([]admissionregistrationv1.MatchCondition{{Name: "c", Expression: tc.expr}})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `matchCondition "c"`) {
			t.Errorf("%s: %v, want an error naming the condition with %q", tc.expr, err, tc.want)
		}
	}
}

type countingAuthorizer struct {
	calls atomic.Int32
	last  atomic.Pointer[authorization.Attributes]
	allow bool
	err   error
}

func (c *countingAuthorizer) Authorize(_ context.Context, a authorization.Attributes) (authorization.Decision, string, error) {
	c.calls.Add(1)
	c.last.Store(&a)
	if c.allow {
		return authorization.DecisionAllow, "yes", c.err
	}
	return authorization.DecisionDeny, "no", c.err
}

func TestAuthorizerLibrary(t *testing.T) {
	for _, tc := range []struct {
		name  string
		expr  string
		authz *countingAuthorizer
		want  ref.Val
		check func(*testing.T, authorization.Attributes)
	}{
		{name: "resource check", expr: "authorizer.group('apps').resource('deployments').namespace('x').name('d').check('get').allowed()",
			authz: &countingAuthorizer{allow: true}, want: types.True, check: func(t *testing.T, a authorization.Attributes) {
				want := authorization.Attributes{User: a.User, Verb: "get", ResourceRequest: true, APIGroup: "apps", APIVersion: "*", Resource: "deployments", Namespace: "x", Name: "d"}
				if a != want || a.User.Name != "alice" {
					t.Errorf("asked %+v, want %+v", a, want)
				}
			}},
		{name: "requestResource is the request's resource", expr: "authorizer.requestResource.check('create').allowed()",
			authz: &countingAuthorizer{allow: true}, want: types.True, check: func(t *testing.T, a authorization.Attributes) {
				if a.Resource != "pods" || a.Namespace != "ns" || a.Name != "p" || a.Verb != "create" || a.APIGroup != "" {
					t.Errorf("asked %+v", a)
				}
			}},
		{name: "reason", expr: "authorizer.path('/metrics').check('get').reason()", authz: &countingAuthorizer{}, want: types.String("no"),
			check: func(t *testing.T, a authorization.Attributes) {
				if a.ResourceRequest || a.Path != "/metrics" || a.Verb != "get" {
					t.Errorf("asked %+v", a)
				}
			}},
		{name: "errored and error", expr: "authorizer.group('').resource('pods').check('list').errored() && authorizer.group('').resource('pods').check('list').error() == 'boom'",
			authz: &countingAuthorizer{err: errors.New("boom")}, want: types.True},
		{name: "serviceAccount", expr: "authorizer.serviceAccount('ns', 'sa').group('').resource('pods').check('list').allowed()",
			authz: &countingAuthorizer{allow: true}, want: types.True, check: func(t *testing.T, a authorization.Attributes) {
				if a.User.Name != "system:serviceaccount:ns:sa" || len(a.User.Groups) != 2 || a.User.Groups[0] != "system:serviceaccounts" || a.User.Groups[1] != "system:serviceaccounts:ns" {
					t.Errorf("asked as %+v", a.User)
				}
			}},
		{name: "an empty resource is an error", expr: "authorizer.group('').resource(' ').check('get').allowed()", authz: &countingAuthorizer{}, want: nil},
		{name: "an invalid service account name is an error", expr: "authorizer.serviceAccount('ns', 'Bad_Name').path('/x').check('get').allowed()", authz: &countingAuthorizer{}, want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewCompiler(Options{})
			if err != nil {
				t.Fatal(err)
			}
			p := c.Compile(tc.expr)
			if p.Err() != nil {
				t.Fatal(p.Err())
			}
			a := podAttrs()
			act := c.NewActivation(context.Background(), Input{Authorizer: tc.authz, User: a.User, Resource: ResourceOf(a)})
			out, left, err := p.Eval(act, RuntimeCostBudget)
			if tc.want == nil {
				if err == nil {
					t.Fatalf("Eval = %v, want an error", out)
				}
				return
			}
			if err != nil || out != tc.want {
				t.Fatalf("Eval = %v, %v; want %v", out, err, tc.want)
			}
			if spent := RuntimeCostBudget - left; spent < authzCheckCost {
				t.Errorf("a check cost %d, want at least Kubernetes' %d", spent, authzCheckCost)
			}
			if tc.check != nil {
				tc.check(t, *tc.authz.last.Load())
			}
		})
	}
}

func TestVariablesAreEvaluatedLazilyOnce(t *testing.T) {
	c, err := NewCompiler(Options{Composition: true})
	if err != nil {
		t.Fatal(err)
	}
	authz := &countingAuthorizer{allow: true}
	for _, v := range []struct{ name, expr string }{
		{"allowed", "authorizer.path('/x').check('get').allowed()"},
		{"unused", "authorizer.path('/y').check('get').allowed()"},
		{"both", "variables.allowed && variables.allowed"},
	} {
		if p := c.AddVariable(v.name, v.expr); p.Err() != nil {
			t.Fatal(p.Err())
		}
	}
	if p := c.AddVariable("forward", "variables.later"); p.Err() == nil || !strings.Contains(p.Err().Error(), "undefined field 'later'") {
		t.Fatalf("a variable read before its declaration: %v", p.Err())
	}
	if p := c.Compile("variables.nope", cel.BoolType); p.Err() == nil {
		t.Fatal("an undeclared variable compiled")
	}
	if p := c.Compile("variables.allowed", cel.BoolType); p.Err() != nil {
		t.Fatalf("a bool variable is not typed bool: %v", p.Err())
	}
	act := c.NewActivation(context.Background(), Input{Authorizer: authz, User: &authentication.User{Name: "u"}})
	p1, p2 := c.Compile("variables.both"), c.Compile("variables.allowed")
	budget := int64(RuntimeCostBudget)
	for _, p := range []*Program{p1, p2} {
		out, left, err := p.Eval(act, budget)
		if err != nil || out != types.True {
			t.Fatalf("%s = %v, %v", p.Expression, out, err)
		}
		budget = left
	}
	if n := authz.calls.Load(); n != 1 {
		t.Fatalf("authorizer asked %d times, want once (variables evaluated once, unused ones never)", n)
	}
	if spent := RuntimeCostBudget - budget; spent < authzCheckCost {
		t.Fatalf("the variable's cost (%d) was not charged", spent)
	}
	out, _, err := c.Compile("variables.forward").Eval(act, RuntimeCostBudget)
	if err == nil || !strings.Contains(err.Error(), `composited variable "forward" fails to compile`) {
		t.Fatalf("reading a variable that did not compile = %v, %v", out, err)
	}
}

func TestCostLimits(t *testing.T) {
	c, err := NewCompiler(Options{Params: true})
	if err != nil {
		t.Fatal(err)
	}
	const nested = "params.l.all(a, params.l.all(b, params.l.all(c, params.l.all(d, params.l.all(e, a + b + c + d + e >= 0)))))"
	expensive := c.Compile(nested, cel.BoolType)
	if expensive.Err() != nil {
		t.Fatal(expensive.Err())
	}
	list := make([]any, 20)
	for i := range list {
		list[i] = int64(i)
	}
	act := c.NewActivation(context.Background(), Input{Params: map[string]any{"l": list}})
	_, _, err = expensive.Eval(act, RuntimeCostBudget)
	if err == nil || err.Error() != "expression '"+nested+"' resulted in error: operation cancelled: actual cost limit exceeded" {
		t.Fatalf("over the per-call limit: %v", err)
	}
	cheap := c.Compile("params.l.all(x, x >= 0)", cel.BoolType)
	_, _, err = cheap.Eval(act, 10)
	if !errors.Is(err, ErrOutOfBudget) || err.Error() != "validation failed due to running out of cost budget, no further validation rules will be run" {
		t.Fatalf("over the budget: %v", err)
	}
}

func TestObjectValue(t *testing.T) {
	m, err := ObjectValue(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"k": "v"}}, corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	if err != nil {
		t.Fatal(err)
	}
	if m["kind"] != "ConfigMap" || m["apiVersion"] != "v1" || m["data"].(map[string]any)["k"] != "v" {
		t.Fatalf("ObjectValue = %v", m)
	}
	if m, err := ObjectValue(nil, schema.GroupVersionKind{}); m != nil || err != nil {
		t.Fatalf("nil object = %v, %v", m, err)
	}
	var nilPod *corev1.Pod
	if m, err := ObjectValue(nilPod, schema.GroupVersionKind{}); m != nil || err != nil {
		t.Fatalf("typed nil object = %v, %v", m, err)
	}
	if RequestValue((*admissionv1.AdmissionRequest)(nil)) != nil {
		t.Fatal("nil request has a value")
	}
}

// The request variable must be the JSON form of the AdmissionRequest, as
// Kubernetes converts it.
func TestRequestValueIsTheJSONForm(t *testing.T) {
	for _, a := range []*admission.Attributes{podAttrs(), {Operation: admission.Delete, Kind: corev1.SchemeGroupVersion.WithKind("Node"),
		Resource: corev1.SchemeGroupVersion.WithResource("nodes"), Subresource: "status", DryRun: true}} {
		req := admission.NewRequest(a, admission.Invocation{Resource: a.Resource, Subresource: a.Subresource, Kind: a.Kind})
		plain := *req
		plain.Options = runtime.RawExtension{}
		want, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&plain)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"uid", "object", "oldObject", "options"} {
			delete(want, k)
		}
		got := RequestValue(req)
		delete(got, "options")
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s %s: (-json +got)\n%s", a.Operation, a.Resource, diff)
		}
	}
}
