package apiserver

import (
	"context"
	"net/http"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// createAdmissionConfig creates an admissionregistration.k8s.io/v1
// object of resource and waits until admission sees it.
func createAdmissionConfig(ctx context.Context, t *testing.T, e *testEnv, resource, body string) {
	t.Helper()
	r := e.do(http.MethodPost, "/apis/admissionregistration.k8s.io/v1/"+resource, body)
	r.expect(t, http.StatusCreated, "")
	var out struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	r.decode(t, &out)
	if err := e.server.WaitForAdmission(ctx, admissionregistrationv1.SchemeGroupVersion.WithResource(resource), out.Metadata.ResourceVersion); err != nil {
		t.Fatal(err)
	}
}

func mutatingPolicy(name, extra, mutations string) string {
	return `{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
  "metadata": {"name": "` + name + `"},
  "spec": {` + extra + `
    "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]},
    "mutations": [` + mutations + `]}}`
}

func mutatingBinding(name, policy, namespace, extra string) string {
	return `{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding",
  "metadata": {"name": "` + name + `"},
  "spec": {"policyName": "` + policy + `", ` + extra + `
    "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "` + namespace + `"}}}}}`
}

const (
	mapPolicies = "mutatingadmissionpolicies"
	mapBindings = "mutatingadmissionpolicybindings"
)

func TestMutatingAdmissionPolicyThroughTheServer(t *testing.T) {
	e := newTestEnv(t)
	ctx := runControllers(t, e)
	for _, ns := range []string{"mutate", "fail", "ignore"} {
		e.do(http.MethodPost, "/api/v1/namespaces", map[string]any{"metadata": map[string]any{"name": ns}}).expect(t, http.StatusCreated, "")
	}
	e.do(http.MethodPost, "/api/v1/namespaces/mutate/configmaps",
		`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "team"}, "data": {"name": "blue"}}`).expect(t, http.StatusCreated, "")
	// Policies apply in name order: "a-count" counts labels, and, with
	// IfNeeded, runs again after "b-defaults" added some.
	createAdmissionConfig(ctx, t, e, mapPolicies, mutatingPolicy("a-count", `"reinvocationPolicy": "IfNeeded",`,
		`{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "Object{metadata: Object.metadata{annotations: {\"labels\": string(has(object.metadata.labels) ? size(object.metadata.labels) : 0)}}}"}}`))
	createAdmissionConfig(ctx, t, e, mapBindings, mutatingBinding("a-count", "a-count", "mutate", ""))
	createAdmissionConfig(ctx, t, e, mapPolicies, mutatingPolicy("b-defaults",
		`"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}, "reinvocationPolicy": "Never",`,
		`{"patchType": "JSONPatch", "jsonPatch": {"expression": "[JSONPatch{op: \"replace\", path: \"/spec/replicas\", value: 3}]"}},
		 {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "Object{metadata: Object.metadata{labels: {\"team\": params.data.name}}, spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: [Object.spec.template.spec.containers{name: \"c\", imagePullPolicy: \"Always\"}, Object.spec.template.spec.containers{name: \"sidecar\", image: \"proxy:1\"}]}}}}"}}`))
	createAdmissionConfig(ctx, t, e, mapBindings, mutatingBinding("b-defaults", "b-defaults", "mutate",
		`"paramRef": {"name": "team", "parameterNotFoundAction": "Deny"},`))

	r := e.do(http.MethodPost, deployPath("mutate", ""), testDeployment("web", 1))
	r.expect(t, http.StatusCreated, "")
	var d appsv1.Deployment
	r.decode(t, &d)
	if *d.Spec.Replicas != 3 {
		t.Errorf("replicas = %d, want 3 (JSONPatch)", *d.Spec.Replicas)
	}
	if d.Labels["team"] != "blue" {
		t.Errorf("labels = %v, want team=blue (ApplyConfiguration with params)", d.Labels)
	}
	if got := d.Annotations["labels"]; got != "1" {
		t.Errorf("annotation labels = %q, want 1 (a-count reinvoked after b-defaults added one)", got)
	}
	cs := d.Spec.Template.Spec.Containers
	if len(cs) != 2 || cs[0].Name != "c" || cs[0].Image != "nginx:1.25" || cs[0].ImagePullPolicy != "Always" || cs[1].Name != "sidecar" || cs[1].Image != "proxy:1" {
		t.Errorf("containers = %+v, want c merged by name (its image kept) and sidecar added", cs)
	}
	if cs[1].TerminationMessagePath == "" {
		t.Errorf("the added container was not defaulted: %+v", cs[1])
	}
	// A deployment the binding does not select is left alone.
	r = e.do(http.MethodPost, deployPath("fail", ""), testDeployment("web", 1))
	r.expect(t, http.StatusCreated, "")
	var other appsv1.Deployment
	r.decode(t, &other)
	if *other.Spec.Replicas != 1 || other.Labels["team"] != "" {
		t.Errorf("deployment in another namespace mutated: replicas %d labels %v", *other.Spec.Replicas, other.Labels)
	}
}

func TestMutatingAdmissionPolicyFailurePolicy(t *testing.T) {
	e := newTestEnv(t)
	ctx := runControllers(t, e)
	for _, ns := range []string{"fail", "ignore"} {
		e.do(http.MethodPost, "/api/v1/namespaces", map[string]any{"metadata": map[string]any{"name": ns}}).expect(t, http.StatusCreated, "")
	}
	// spec.selector is an atomic struct: apply configurations may not set it
	const atomic = `{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "Object{spec: Object.spec{selector: Object.spec.selector{matchLabels: {\"app\": \"other\"}}}}"}}`
	createAdmissionConfig(ctx, t, e, mapPolicies, mutatingPolicy("fail", `"failurePolicy": "Fail", "reinvocationPolicy": "Never",`, atomic))
	createAdmissionConfig(ctx, t, e, mapBindings, mutatingBinding("fail", "fail", "fail", ""))
	createAdmissionConfig(ctx, t, e, mapPolicies, mutatingPolicy("ignore", `"failurePolicy": "Ignore", "reinvocationPolicy": "Never",`, atomic))
	createAdmissionConfig(ctx, t, e, mapBindings, mutatingBinding("ignore", "ignore", "ignore", ""))

	r := e.do(http.MethodPost, deployPath("fail", ""), testDeployment("web", 1))
	r.expect(t, http.StatusForbidden, metav1.StatusReasonInvalid)
	st := r.status(t)
	const want = "policy 'fail' with binding 'fail' denied request: error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: .spec.selector"
	if st.Message != want {
		t.Errorf("message = %q, want %q", st.Message, want)
	}
	if st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Message != want {
		t.Errorf("details = %+v", st.Details)
	}
	e.do(http.MethodGet, deployPath("fail", "web"), nil).expect(t, http.StatusNotFound, metav1.StatusReasonNotFound)

	r = e.do(http.MethodPost, deployPath("ignore", ""), testDeployment("web", 1))
	r.expect(t, http.StatusCreated, "")
	var d appsv1.Deployment
	r.decode(t, &d)
	if got := d.Spec.Selector.MatchLabels["app"]; got != "web" {
		t.Errorf("selector app = %q, want web (the failed mutation ignored)", got)
	}
	if strings.Contains(string(r.body), "other") {
		t.Errorf("the ignored mutation left a trace: %s", r.body)
	}
}

func TestAdmissionMergerAsServerSideApply(t *testing.T) {
	e := newTestEnv(t)
	m := admissionMerger{e.server}
	gvk := appsv1.SchemeGroupVersion.WithKind("Deployment")
	d := testDeployment("web", 1)
	d.TypeMeta = metav1.TypeMeta{}
	containers := func(cs ...map[string]any) map[string]any {
		return map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": toAny(cs)}}}}
	}
	out, err := m.Merge(gvk, d, containers(map[string]any{"name": "c", "imagePullPolicy": "Always"}, map[string]any{"name": "s", "image": "proxy:1"}))
	if err != nil {
		t.Fatal(err)
	}
	got, ok := out.(*appsv1.Deployment)
	if !ok {
		t.Fatalf("merged a %T", out)
	}
	cs := got.Spec.Template.Spec.Containers
	if len(cs) != 2 || cs[0].Image != "nginx:1.25" || cs[0].ImagePullPolicy != "Always" || cs[1].Name != "s" {
		t.Errorf("containers = %+v, want c kept and merged, s appended", cs)
	}
	if len(d.Spec.Template.Spec.Containers) != 1 || d.Spec.Template.Spec.Containers[0].ImagePullPolicy != "" {
		t.Errorf("the object merged into was changed: %+v", d.Spec.Template.Spec.Containers)
	}
	_, err = m.Merge(gvk, d, containers(map[string]any{"name": "c", "command": []any{"sh"}}))
	if err == nil || !strings.Contains(err.Error(), "may not mutate atomic arrays, maps or structs: .spec.template.spec.containers[0].command") {
		t.Errorf("setting an atomic list: %v", err)
	}
	_, err = m.Merge(appsv1.SchemeGroupVersion.WithKind("Nothing"), d, map[string]any{})
	if !apierrors.IsServiceUnavailable(err) {
		t.Errorf("an unknown kind: %v, want ServiceUnavailable", err)
	}
}

func toAny(ms []map[string]any) []any {
	out := make([]any, len(ms))
	for i, m := range ms {
		out[i] = m
	}
	return out
}

func TestMutatingAdmissionPolicyOnCustomResources(t *testing.T) {
	e := newTestEnv(t)
	ctx := runControllers(t, e)
	e.createCRD(testCRD())
	createAdmissionConfig(ctx, t, e, mapPolicies, `{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
  "metadata": {"name": "widgets"},
  "spec": {"reinvocationPolicy": "Never",
    "matchConstraints": {"resourceRules": [{"apiGroups": ["example.com"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["widgets"]}]},
    "mutations": [
      {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "Object{spec: Object.spec{color: \"blue\"}}"}},
      {"patchType": "JSONPatch", "jsonPatch": {"expression": "[JSONPatch{op: \"replace\", path: \"/spec/replicas\", value: object.spec.replicas * 2}]"}}]}}`)
	createAdmissionConfig(ctx, t, e, mapBindings, `{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding",
  "metadata": {"name": "widgets"}, "spec": {"policyName": "widgets"}}`)

	r := e.do(http.MethodPost, widgetsPath, widget("w", 2, "red"))
	r.expect(t, http.StatusCreated, "")
	var got struct {
		Spec struct {
			Replicas int64  `json:"replicas"`
			Color    string `json:"color"`
		} `json:"spec"`
	}
	r.decode(t, &got)
	if got.Spec.Color != "blue" || got.Spec.Replicas != 4 {
		t.Errorf("spec = %+v, want color blue (ApplyConfiguration) and replicas 4 (JSONPatch)", got.Spec)
	}
}

func TestMutatingAdmissionPolicyOnTheScaleSubresource(t *testing.T) {
	e := newTestEnv(t)
	ctx := runControllers(t, e)
	createAdmissionConfig(ctx, t, e, mapPolicies, `{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
  "metadata": {"name": "scale"},
  "spec": {"reinvocationPolicy": "Never",
    "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["deployments/scale"]}]},
    "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "Object{spec: Object.spec{replicas: object.spec.replicas + 1}}"}}]}}`)
	createAdmissionConfig(ctx, t, e, mapBindings, `{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding",
  "metadata": {"name": "scale"}, "spec": {"policyName": "scale"}}`)
	e.do(http.MethodPost, deployPath("default", ""), testDeployment("web", 1)).expect(t, http.StatusCreated, "")
	r := e.do(http.MethodPatch, deployPath("default", "web")+"/scale", `{"spec": {"replicas": 4}}`, "Content-Type", "application/merge-patch+json")
	r.expect(t, http.StatusOK, "")
	var d appsv1.Deployment
	e.do(http.MethodGet, deployPath("default", "web"), nil).decode(t, &d)
	if *d.Spec.Replicas != 5 {
		t.Errorf("replicas = %d, want 5 (4 asked, one added by the policy on the Scale)", *d.Spec.Replicas)
	}
}
