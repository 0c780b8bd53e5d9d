package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func validatingWebhook(name string) admissionregistrationv1.ValidatingWebhook {
	none := admissionregistrationv1.SideEffectClassNone
	return admissionregistrationv1.ValidatingWebhook{
		Name:                    name,
		ClientConfig:            admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "default", Name: "hook"}},
		SideEffects:             &none,
		AdmissionReviewVersions: []string{"v1"},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{"CREATE"},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
		}},
	}
}

func TestWebhookDefaults(t *testing.T) {
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{validatingWebhook("a.example.com")}}
	ValidatingWebhookConfigurations().Default(v)
	h := v.Webhooks[0]
	if *h.FailurePolicy != admissionregistrationv1.Fail || *h.MatchPolicy != admissionregistrationv1.Equivalent || *h.TimeoutSeconds != 10 ||
		h.NamespaceSelector == nil || h.ObjectSelector == nil || *h.ClientConfig.Service.Port != 443 || *h.Rules[0].Scope != "*" {
		t.Errorf("validating defaults: %+v", h)
	}
	m := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "a.example.com"}}}
	MutatingWebhookConfigurations().Default(m)
	if *m.Webhooks[0].ReinvocationPolicy != admissionregistrationv1.NeverReinvocationPolicy || *m.Webhooks[0].FailurePolicy != admissionregistrationv1.Fail {
		t.Errorf("mutating defaults: %+v", m.Webhooks[0])
	}
}

func TestWebhookValidation(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*admissionregistrationv1.ValidatingWebhook)
		want   []string
	}{
		{"valid", func(*admissionregistrationv1.ValidatingWebhook) {}, nil},
		{"unqualified name", func(h *admissionregistrationv1.ValidatingWebhook) { h.Name = "hook" }, []string{
			`webhooks[0].name: Invalid value: "hook": should be a domain with at least three segments separated by dots`,
		}},
		{"no side effects, no versions", func(h *admissionregistrationv1.ValidatingWebhook) {
			h.SideEffects = nil
			h.AdmissionReviewVersions = nil
		}, []string{
			"webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
			"webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1",
		}},
		{"side effects Some, unknown versions", func(h *admissionregistrationv1.ValidatingWebhook) {
			some := admissionregistrationv1.SideEffectClassSome
			h.SideEffects = &some
			h.AdmissionReviewVersions = []string{"v2", "v2"}
		}, []string{
			`webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun"`,
			`webhooks[0].admissionReviewVersions[1]: Invalid value: "v2": duplicate version`,
			`webhooks[0].admissionReviewVersions: Invalid value: ["v2","v2"]: must include at least one of v1, v1beta1`,
		}},
		{"url and service", func(h *admissionregistrationv1.ValidatingWebhook) { h.ClientConfig.URL = ptr("https://example.com") }, []string{
			"webhooks[0].clientConfig: Required value: exactly one of url or service is required",
		}},
		{"bad url", func(h *admissionregistrationv1.ValidatingWebhook) {
			h.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr("http://user@example.com/hook?x=1#frag")}
		}, []string{
			`webhooks[0].clientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]`,
			`webhooks[0].clientConfig.url: Invalid value: "user": user information is not permitted in the URL`,
			`webhooks[0].clientConfig.url: Invalid value: "frag": fragments are not permitted in the URL`,
			`webhooks[0].clientConfig.url: Invalid value: "x=1": query parameters are not permitted in the URL`,
		}},
		{"bad service", func(h *admissionregistrationv1.ValidatingWebhook) {
			h.ClientConfig.Service = &admissionregistrationv1.ServiceReference{Port: ptr[int32](70000), Path: ptr("/a//B")}
		}, []string{
			"webhooks[0].clientConfig.service.name: Required value: service name is required",
			"webhooks[0].clientConfig.service.namespace: Required value: service namespace is required",
			"webhooks[0].clientConfig.service.port: Invalid value: 70000: port is not valid: must be between 1 and 65535, inclusive",
			`webhooks[0].clientConfig.service.path: Invalid value: "/a//B": segment[1] may not be empty`,
			`webhooks[0].clientConfig.service.path: Invalid value: "/a//B": segment[2]: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
		}},
		{"timeout and policies", func(h *admissionregistrationv1.ValidatingWebhook) {
			h.TimeoutSeconds = ptr[int32](31)
			h.FailurePolicy = ptr(admissionregistrationv1.FailurePolicyType("Maybe"))
			h.MatchPolicy = ptr(admissionregistrationv1.MatchPolicyType("Loose"))
		}, []string{
			`webhooks[0].failurePolicy: Unsupported value: "Maybe": supported values: "Fail", "Ignore"`,
			`webhooks[0].matchPolicy: Unsupported value: "Loose": supported values: "Equivalent", "Exact"`,
			"webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
		}},
		{"rules", func(h *admissionregistrationv1.ValidatingWebhook) {
			h.Rules = []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{"*", "PATCH"},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"*", "apps"}, Resources: []string{"*/*", "pods"}, Scope: ptr(admissionregistrationv1.ScopeType("Global"))},
			}}
		}, []string{
			`webhooks[0].rules[0].operations: Invalid value: ["*","PATCH"]: if '*' is present, must not specify other operations`,
			`webhooks[0].rules[0].operations[1]: Unsupported value: "PATCH": supported values: "*", "CONNECT", "CREATE", "DELETE", "UPDATE"`,
			`webhooks[0].rules[0].apiGroups: Invalid value: ["*","apps"]: if '*' is present, must not specify other API groups`,
			"webhooks[0].rules[0].apiVersions: Required value",
			`webhooks[0].rules[0].resources: Invalid value: ["*/*","pods"]: if '*/*' is present, must not specify other resources`,
			`webhooks[0].rules[0].scope: Unsupported value: "Global": supported values: "*", "Cluster", "Namespaced"`,
		}},
		{"match conditions", func(h *admissionregistrationv1.ValidatingWebhook) {
			h.MatchConditions = []admissionregistrationv1.MatchCondition{
				{Name: "ok", Expression: "object.metadata.name != 'x' && request.operation == 'CREATE'"},
				{Name: "ok", Expression: "1 + 1"},
				{Name: "bad name!", Expression: "nope"},
				{Expression: " "},
			}
		}, []string{
			`webhooks[0].matchConditions[1].expression: Invalid value: "1 + 1": must evaluate to bool`,
			`webhooks[0].matchConditions[1].name: Duplicate value: "ok"`,
			"webhooks[0].matchConditions[2].expression: Invalid value: \"nope\": compilation failed: ERROR: <input>:1:1: undeclared reference to 'nope' (in container '')\n | nope\n | ^",
			`webhooks[0].matchConditions[2].name: Invalid value: "bad name!": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
			"webhooks[0].matchConditions[3].expression: Required value",
			"webhooks[0].matchConditions[3].name: Required value",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := validatingWebhook("a.example.com")
			tc.mutate(&h)
			c := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{h}}
			ValidatingWebhookConfigurations().Default(c) // as the server does first
			if d := cmp.Diff(tc.want, errStrings(ValidatingWebhookConfigurations().Validate(c))); d != "" {
				t.Errorf("errors (-want +got):\n%s", d)
			}
		})
	}
	// Names are unique within a configuration; mutating webhooks are checked alike.
	m := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
	for range 2 {
		v := validatingWebhook("a.example.com")
		m.Webhooks = append(m.Webhooks, admissionregistrationv1.MutatingWebhook{
			Name: v.Name, ClientConfig: v.ClientConfig, SideEffects: v.SideEffects, AdmissionReviewVersions: v.AdmissionReviewVersions,
			ReinvocationPolicy: ptr(admissionregistrationv1.ReinvocationPolicyType("Always")),
		})
	}
	want := []string{
		`webhooks[0].reinvocationPolicy: Unsupported value: "Always": supported values: "IfNeeded", "Never"`,
		`webhooks[1].reinvocationPolicy: Unsupported value: "Always": supported values: "IfNeeded", "Never"`,
		`webhooks[1].name: Duplicate value: "a.example.com"`,
	}
	MutatingWebhookConfigurations().Default(m)
	if d := cmp.Diff(want, errStrings(MutatingWebhookConfigurations().Validate(m))); d != "" {
		t.Errorf("mutating (-want +got):\n%s", d)
	}
}

func TestWebhookUpdateKeepsOldViolations(t *testing.T) {
	st := ValidatingWebhookConfigurations()
	some := admissionregistrationv1.SideEffectClassSome
	h := validatingWebhook("a.example.com")
	h.SideEffects = &some
	old := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "c", ResourceVersion: "1"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{h}}
	st.Default(old)
	upd := old.DeepCopy()
	upd.Webhooks[0].TimeoutSeconds = ptr[int32](5)
	if errs := st.ValidateUpdate(upd, old); len(errs) != 0 {
		t.Errorf("an old webhook with side effects may be updated: %v", errs)
	}
	// A configuration without side effects may not gain them.
	clean := old.DeepCopy()
	clean.Webhooks[0].SideEffects = ptr(admissionregistrationv1.SideEffectClassNone)
	want := []string{`webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun"`}
	if d := cmp.Diff(want, errStrings(st.ValidateUpdate(upd, clean))); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}
