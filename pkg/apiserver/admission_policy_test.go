package apiserver

import (
	"net/http"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
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
	var last metav1.ObjectMeta
	create := func(path, body, resource string) {
		r := e.do(http.MethodPost, path, body)
		r.expect(t, http.StatusCreated, "")
		var out struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		r.decode(t, &out)
		last = out.Metadata
		if err := e.server.WaitForAdmission(ctx, admissionregistrationv1.SchemeGroupVersion.WithResource(resource), last.ResourceVersion); err != nil {
			t.Fatal(err)
		}
	}
	create("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies", replicaLimitPolicy, "validatingadmissionpolicies")
	create("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings", binding("deny", "Deny"), "validatingadmissionpolicybindings")
	create("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings", binding("warn", "Warn"), "validatingadmissionpolicybindings")

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
