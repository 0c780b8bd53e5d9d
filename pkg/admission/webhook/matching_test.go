package webhook

import (
	"context"
	"errors"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kplane/kplane/pkg/admission"
	"github.com/kplane/kplane/pkg/admission/admissiontest"
)

// fakeConditions evaluates matchConditions by name: "true", "false" and
// "error" do what they say.
type fakeConditions struct {
	conditions []admissionregistrationv1.MatchCondition
	seen       *admissionv1.AdmissionRequest
}

func (f *fakeConditions) Match(_ context.Context, _ *admission.Attributes, object, _ runtime.Object, request *admissionv1.AdmissionRequest) (bool, string, error) {
	f.seen = request
	var evalErr error
	for _, c := range f.conditions {
		switch c.Expression {
		case "false":
			return false, c.Name, nil
		case "error":
			evalErr = errors.New("no such key: x")
		}
	}
	if evalErr != nil {
		return false, "", evalErr
	}
	return true, "", nil
}

func compiler(f **fakeConditions) admission.ConditionCompiler {
	return func(cs []admissionregistrationv1.MatchCondition) (admission.ConditionMatcher, error) {
		for _, c := range cs {
			if c.Expression == "compile error" {
				return nil, errors.New("compilation failed: syntax error")
			}
		}
		*f = &fakeConditions{conditions: cs}
		return *f, nil
	}
}

func TestWebhookMatchingAsKubernetesShouldCallHook(t *testing.T) {
	sel := func(k, v string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
	}
	cond := func(exprs ...string) []admissionregistrationv1.MatchCondition {
		var out []admissionregistrationv1.MatchCondition
		for _, e := range exprs {
			out = append(out, admissionregistrationv1.MatchCondition{Name: "c-" + e, Expression: e})
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		hook     func(*webhookSpec)
		attrs    func(*admission.Attributes)
		noCEL    bool
		wantCall bool
		wantErr  string
		wantCode int32
	}{
		{name: "rule matches", wantCall: true},
		{name: "other operation", hook: func(h *webhookSpec) { h.rules = podRules(admissionregistrationv1.Delete) }},
		{name: "other resource", attrs: func(a *admission.Attributes) { a.Resource.Resource = "services" }},
		{name: "subresource not covered by the resource's rule", attrs: func(a *admission.Attributes) { a.Subresource = "status" }},
		{name: "cluster scope rule on a namespaced pod", hook: func(h *webhookSpec) {
			s := admissionregistrationv1.ClusterScope
			h.rules[0].Scope = &s
		}},
		{name: "object selector matches new object", hook: func(h *webhookSpec) { h.objectSelector = sel("app", "web") }, wantCall: true},
		{name: "object selector matches neither object", hook: func(h *webhookSpec) { h.objectSelector = sel("app", "db") }},
		{name: "object selector matches the old object", hook: func(h *webhookSpec) { h.objectSelector = sel("old", "yes") }, attrs: func(a *admission.Attributes) {
			a.Operation = admission.Update
			a.OldObject = pod(map[string]string{"old": "yes"})
		}, wantCall: true},
		{name: "namespace selector matches", hook: func(h *webhookSpec) { h.namespaceSelector = sel("env", "prod") }, wantCall: true},
		{name: "namespace selector does not match", hook: func(h *webhookSpec) { h.namespaceSelector = sel("env", "dev") }},
		{name: "namespace not found is its 404", hook: func(h *webhookSpec) { h.namespaceSelector = sel("env", "prod") },
			attrs: func(a *admission.Attributes) { a.Namespace = "gone" }, wantErr: `namespaces "gone" not found`, wantCode: 404},
		{name: "invalid selector is an internal error", hook: func(h *webhookSpec) {
			h.objectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}
		}, wantErr: `Internal error occurred: "Bogus" is not a valid label selector operator`, wantCode: 500},
		{name: "matchConditions hold", hook: func(h *webhookSpec) { h.conditions = cond("true") }, wantCall: true},
		{name: "a false matchCondition skips", hook: func(h *webhookSpec) { h.conditions = cond("true", "false") }},
		{name: "false wins over an error", hook: func(h *webhookSpec) { h.conditions = cond("error", "false") }},
		{name: "condition error with Fail forbids", hook: func(h *webhookSpec) { h.conditions = cond("error") },
			wantErr: `pods "p" is forbidden: no such key: x`, wantCode: 403},
		{name: "condition error with Ignore skips", hook: func(h *webhookSpec) {
			h.conditions = cond("error")
			h.failurePolicy = admissionregistrationv1.Ignore
		}},
		{name: "compile error with Fail forbids", hook: func(h *webhookSpec) { h.conditions = cond("compile error") },
			wantErr: `pods "p" is forbidden: compilation failed: syntax error`, wantCode: 403},
		{name: "no compiler with Fail forbids", noCEL: true, hook: func(h *webhookSpec) { h.conditions = cond("true") },
			wantErr: `pods "p" is forbidden: matchConditions cannot be evaluated: the server has no expression compiler`, wantCode: 403},
		{name: "no compiler with Ignore skips", noCEL: true, hook: func(h *webhookSpec) {
			h.conditions = cond("true")
			h.failurePolicy = admissionregistrationv1.Ignore
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, mutating := range []bool{false, true} {
				s := newServer(t, allow)
				h := hookFor("w", s)
				if tc.hook != nil {
					tc.hook(&h)
				}
				a := createPod(map[string]string{"app": "web"})
				if tc.attrs != nil {
					tc.attrs(a)
				}
				src := &admissiontest.Source{}
				src.Set(namespacesResource, namespace("ns", map[string]string{"env": "prod"}))
				var fc *fakeConditions
				cfg := admission.Config{Conditions: compiler(&fc)}
				if tc.noCEL {
					cfg.Conditions = nil
				}
				var err error
				if mutating {
					err = admitWith(t, src, a, cfg, mutatingConfig("c", h))
				} else {
					err = validateWith(t, src, a, cfg, validatingConfig("c", h))
				}
				if tc.wantErr != "" {
					st := statusOf(t, err)
					if st.Message != tc.wantErr || st.Code != tc.wantCode {
						t.Fatalf("mutating=%v: got %d %q, want %d %q", mutating, st.Code, st.Message, tc.wantCode, tc.wantErr)
					}
				} else if err != nil {
					t.Fatalf("mutating=%v: %v", mutating, err)
				}
				if called := s.calls() > 0; called != tc.wantCall {
					t.Fatalf("mutating=%v: called = %v, want %v", mutating, called, tc.wantCall)
				}
				if fc != nil && fc.seen != nil && fc.seen.Kind.Kind != "Pod" {
					t.Fatalf("conditions saw request %+v", fc.seen)
				}
			}
		})
	}
}

func TestWebhookMatchPolicyEquivalentConvertsTheObject(t *testing.T) {
	v2Rule := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"example.com"}, APIVersions: []string{"v2"}, Resources: []string{"widgets"}},
	}}
	createWidget := func() *admission.Attributes {
		return &admission.Attributes{Operation: admission.Create, Kind: widgetKindV1, Resource: widgetsV1, Namespace: "ns", Name: "w", Object: widget(3), Objects: widgetObjects{}}
	}
	equivalent, exact := admissionregistrationv1.Equivalent, admissionregistrationv1.Exact

	t.Run("Exact does not match another version", func(t *testing.T) {
		s := newServer(t, deny(nil))
		h := hookFor("w", s)
		h.rules, h.matchPolicy = v2Rule, &exact
		if err := validateWith(t, &admissiontest.Source{}, createWidget(), admission.Config{}, validatingConfig("c", h)); err != nil || s.calls() != 0 {
			t.Fatalf("err = %v, calls = %d", err, s.calls())
		}
	})
	t.Run("Equivalent sends the object at the webhook's version", func(t *testing.T) {
		s := newServer(t, allow)
		h := hookFor("w", s)
		h.rules, h.matchPolicy = v2Rule, &equivalent
		if err := validateWith(t, &admissiontest.Source{}, createWidget(), admission.Config{}, validatingConfig("c", h)); err != nil {
			t.Fatal(err)
		}
		req := s.last(t).Request
		if req.Kind.Version != "v2" || req.Resource.Version != "v2" || req.RequestKind.Version != "v1" || req.RequestResource.Version != "v1" {
			t.Fatalf("kind %v resource %v requestKind %v requestResource %v", req.Kind, req.Resource, req.RequestKind, req.RequestResource)
		}
		if got := string(req.Object.Raw); got != `{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"w","namespace":"ns"},"spec":{"count":3}}` {
			t.Fatalf("object = %s", got)
		}
	})
	t.Run("a patch at the webhook's version is converted back", func(t *testing.T) {
		s := newServer(t, jsonPatch(`[{"op":"replace","path":"/spec/count","value":5}]`))
		h := hookFor("w", s)
		h.rules, h.matchPolicy = v2Rule, &equivalent
		a := createWidget()
		if err := admitWith(t, &admissiontest.Source{}, a, admission.Config{}, mutatingConfig("c", h)); err != nil {
			t.Fatal(err)
		}
		got := a.Object.(interface{ UnstructuredContent() map[string]any }).UnstructuredContent()
		if got["apiVersion"] != "example.com/v1" || got["spec"].(map[string]any)["size"] != int64(5) {
			t.Fatalf("object = %v", got)
		}
	})
}
