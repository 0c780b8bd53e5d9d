package policy

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/kplane/kplane/pkg/admission"
)

func TestMetricsAsKubernetes(t *testing.T) {
	reg := prometheus.NewRegistry()
	src := newFakeSource(newNamespace("default", nil),
		newPolicy("p", nil, replicasAtMost5()),
		newBinding("deny", "p", nil),
		newBinding("warn-audit", "p", actions(admissionregistrationv1.Warn, admissionregistrationv1.Audit)),
		newPolicy("broken", ignore, admissionregistrationv1.Validation{Expression: "undeclared"}),
		newBinding("ignored", "broken", nil),
	)
	cfg := &admission.Config{Source: src, Resolver: fakeResolver{}, Metrics: reg}
	plugin, err := NewValidating(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewValidating(cfg); err != nil {
		t.Fatalf("a second plugin on the same registry: %v", err)
	}
	v := plugin.(*Validating)
	if err := v.Validate(context.Background(), createAttrs(newDeployment("web", 10, nil))); err == nil {
		t.Fatal("admitted")
	}
	const want = `
# HELP apiserver_validating_admission_policy_check_total Validations of admission policies that failed or erred, by policy, binding, error type and the action taken (allow, deny, warn or audit).
# TYPE apiserver_validating_admission_policy_check_total counter
apiserver_validating_admission_policy_check_total{enforcement_action="allow",error_type="compile_error",policy="broken",policy_binding="ignored"} 1
apiserver_validating_admission_policy_check_total{enforcement_action="audit",error_type="invalid_error",policy="p",policy_binding="warn-audit"} 1
apiserver_validating_admission_policy_check_total{enforcement_action="deny",error_type="invalid_error",policy="p",policy_binding="deny"} 1
apiserver_validating_admission_policy_check_total{enforcement_action="warn",error_type="invalid_error",policy="p",policy_binding="warn-audit"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "apiserver_validating_admission_policy_check_total"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(v.metrics.latency); n != 4 {
		t.Fatalf("%d latency series, want 4", n)
	}
}
