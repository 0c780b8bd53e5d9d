package apiserver

import (
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const replicaLimitPolicy = `{
  "apiVersion": "admissionregistration.k8s.io/v1",
  "kind": "ValidatingAdmissionPolicy",
  "metadata": {"name": "replica-limit"},
  "spec": {
    "failurePolicy": "Fail",
    "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]},
    "validations": [{"expression": "object.spec.replicas <= 5", "messageExpression": "'replicas must be at most 5, got ' + string(object.spec.replicas)"}]
  }
}`

func binding(name, action string) string {
	return `{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
  "metadata": {"name": "` + name + `"},
  "spec": {"policyName": "replica-limit", "validationActions": ["` + action + `"],
    "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "` + name + `"}}}}}`
}

func TestValidatingAdmissionPolicyThroughTheServer(t *testing.T) {
	e := newTestEnv(t)
	ctx := runControllers(t, e)
	for _, ns := range []string{"deny", "warn"} {
		e.do(http.MethodPost, "/api/v1/namespaces", map[string]any{"metadata": map[string]any{"name": ns}}).expect(t, http.StatusCreated, "")
	}
	createAdmissionConfig(ctx, t, e, "validatingadmissionpolicies", replicaLimitPolicy)
	createAdmissionConfig(ctx, t, e, "validatingadmissionpolicybindings", binding("deny", "Deny"))
	createAdmissionConfig(ctx, t, e, "validatingadmissionpolicybindings", binding("warn", "Warn"))

	r := e.do(http.MethodPost, deployPath("deny", ""), testDeployment("big", 10))
	r.expect(t, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid)
	st := r.status(t)
	const denial = `ValidatingAdmissionPolicy 'replica-limit' with binding 'deny' denied request: replicas must be at most 5, got 10`
	if st.Message != `deployments.apps "big" is forbidden: `+denial {
		t.Fatalf("message = %q", st.Message)
	}
	// kubectl prints the cause: "The deployments "big" is invalid: : <denial>".
	if st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Message != denial {
		t.Fatalf("details = %+v", st.Details)
	}
	e.do(http.MethodGet, deployPath("deny", "big"), nil).expect(t, http.StatusNotFound, metav1.StatusReasonNotFound)
	e.do(http.MethodPost, deployPath("deny", ""), testDeployment("small", 3)).expect(t, http.StatusCreated, "")

	r = e.do(http.MethodPost, deployPath("warn", ""), testDeployment("big", 10))
	r.expect(t, http.StatusCreated, "")
	if w := strings.Join(r.header.Values("Warning"), "\n"); !strings.Contains(w, "Validation failed for ValidatingAdmissionPolicy 'replica-limit' with binding 'warn': replicas must be at most 5, got 10") {
		t.Fatalf("warnings = %q", w)
	}
}

// TestAdmissionWarningsOnDelete checks that a delete answers the warnings
// of the policies that saw it, as creates and updates do.
func TestAdmissionWarningsOnDelete(t *testing.T) {
	e := newTestEnv(t)
	ctx := runControllers(t, e)
	createAdmissionConfig(ctx, t, e, "validatingadmissionpolicies", `{
  "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
  "metadata": {"name": "keep-marked"},
  "spec": {"failurePolicy": "Fail",
    "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["DELETE"], "resources": ["configmaps"]}]},
    "validations": [{"expression": "!has(oldObject.metadata.labels) || !('keep' in oldObject.metadata.labels)", "message": "this config map is marked keep"}]}}`)
	createAdmissionConfig(ctx, t, e, "validatingadmissionpolicybindings", `{
  "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
  "metadata": {"name": "keep-marked"},
  "spec": {"policyName": "keep-marked", "validationActions": ["Warn"]}}`)
	for _, name := range []string{"a", "b"} {
		e.do(http.MethodPost, "/api/v1/namespaces/default/configmaps", map[string]any{"metadata": map[string]any{"name": name, "labels": map[string]string{"keep": "yes"}}}).expect(t, http.StatusCreated, "")
	}
	const want = "Validation failed for ValidatingAdmissionPolicy 'keep-marked' with binding 'keep-marked': this config map is marked keep"
	r := e.do(http.MethodDelete, "/api/v1/namespaces/default/configmaps/a", nil)
	r.expect(t, http.StatusOK, "")
	if w := r.header.Values("Warning"); len(w) != 1 || !strings.Contains(w[0], want) {
		t.Errorf("delete warnings = %q, want one with %q", w, want)
	}
	r = e.do(http.MethodDelete, "/api/v1/namespaces/default/configmaps", nil)
	r.expect(t, http.StatusOK, "")
	if w := r.header.Values("Warning"); len(w) != 1 || !strings.Contains(w[0], want) {
		t.Errorf("deletecollection warnings = %q, want one with %q", w, want)
	}
}
