package apiserver

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kplane/kplane/pkg/authentication"
	"github.com/kplane/kplane/pkg/authorization"
)

const (
	applyType = "application/apply-patch+yaml"
	cmPath    = "/api/v1/namespaces/default/configmaps"
)

// apply sends a server-side apply of body as manager (none when empty).
func (e *testEnv) apply(path, manager, body string, query ...string) response {
	e.t.Helper()
	q := []string{}
	if manager != "" {
		q = append(q, "fieldManager="+manager)
	}
	q = append(q, query...)
	if len(q) > 0 {
		path += "?" + strings.Join(q, "&")
	}
	return e.do("PATCH", path, body, "Content-Type", applyType)
}

// owners maps each manager of obj's managedFields ("name/Operation", with
// "/subresource" when it has one) to its fieldsV1.
func owners(t *testing.T, m metav1.ObjectMeta) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, e := range m.ManagedFields {
		key := e.Manager + "/" + string(e.Operation)
		if e.Subresource != "" {
			key += "/" + e.Subresource
		}
		if e.FieldsType != "FieldsV1" || e.Time == nil || e.APIVersion == "" {
			t.Errorf("entry %s: fieldsType %q time %v apiVersion %q", key, e.FieldsType, e.Time, e.APIVersion)
		}
		out[key] = e.FieldsV1.GetRawString()
	}
	return out
}

func configMap(t *testing.T, r response) *corev1.ConfigMap {
	t.Helper()
	var cm corev1.ConfigMap
	r.decode(t, &cm)
	return &cm
}

func TestApplyOwnershipOfConfigMapData(t *testing.T) {
	e := newTestEnv(t)
	// A YAML configuration creates the object: 201, owned by its applier.
	r := e.apply(cmPath+"/cm", "alice", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: one\n  b: two\n")
	r.expect(t, 201, "")
	cm := configMap(t, r)
	if got, want := owners(t, cm.ObjectMeta), map[string]string{"alice/Apply": `{"f:data":{"f:a":{},"f:b":{}}}`}; !equalMaps(got, want) {
		t.Fatalf("after create: owners %v, want %v", got, want)
	}
	rv := cm.ResourceVersion

	// The same configuration again changes nothing, not even the
	// resourceVersion. JSON is YAML.
	r = e.apply(cmPath+"/cm", "alice", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"a":"one","b":"two"}}`)
	r.expect(t, 200, "")
	if got := configMap(t, r).ResourceVersion; got != rv {
		t.Fatalf("a no-op apply wrote: resourceVersion %s -> %s", rv, got)
	}

	// Another manager changing a field alice owns conflicts.
	r = e.apply(cmPath+"/cm", "bob", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: uno\n")
	r.expect(t, 409, metav1.StatusReasonConflict)
	st := r.status(t)
	if want := `Apply failed with 1 conflict: conflict with "alice": .data.a`; st.Message != want {
		t.Fatalf("conflict message %q, want %q", st.Message, want)
	}
	if st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Type != metav1.CauseTypeFieldManagerConflict ||
		st.Details.Causes[0].Field != ".data.a" || st.Details.Causes[0].Message != `conflict with "alice"` {
		t.Fatalf("conflict details %+v", st.Details)
	}
	// The same value is no conflict: both own it.
	r = e.apply(cmPath+"/cm", "bob", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: one\n  c: three\n")
	r.expect(t, 200, "")
	if got, want := owners(t, configMap(t, r).ObjectMeta), map[string]string{
		"alice/Apply": `{"f:data":{"f:a":{},"f:b":{}}}`,
		"bob/Apply":   `{"f:data":{"f:a":{},"f:c":{}}}`,
	}; !equalMaps(got, want) {
		t.Fatalf("shared field: owners %v, want %v", got, want)
	}
	// force takes the field.
	r = e.apply(cmPath+"/cm", "bob", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: uno\n  c: three\n", "force=true")
	r.expect(t, 200, "")
	cm = configMap(t, r)
	if cm.Data["a"] != "uno" {
		t.Fatalf("forced apply: data %v", cm.Data)
	}
	if got, want := owners(t, cm.ObjectMeta), map[string]string{
		"alice/Apply": `{"f:data":{"f:b":{}}}`,
		"bob/Apply":   `{"f:data":{"f:a":{},"f:c":{}}}`,
	}; !equalMaps(got, want) {
		t.Fatalf("forced: owners %v, want %v", got, want)
	}
	// alice stops applying b: it is removed; c, owned by bob, stays.
	r = e.apply(cmPath+"/cm", "alice", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n")
	r.expect(t, 200, "")
	cm = configMap(t, r)
	if _, ok := cm.Data["b"]; ok || cm.Data["c"] != "three" || cm.Data["a"] != "uno" {
		t.Fatalf("after alice dropped b: data %v", cm.Data)
	}
	// An update records its manager from fieldManager, and takes the
	// fields it changed from their appliers.
	cm.Data["c"] = "drei"
	r = e.do("PUT", cmPath+"/cm?fieldManager=carol", cm)
	r.expect(t, 200, "")
	got := owners(t, configMap(t, r).ObjectMeta)
	if got["carol/Update"] != `{"f:data":{"f:c":{}}}` || got["bob/Apply"] != `{"f:data":{"f:a":{}}}` {
		t.Fatalf("after update: owners %v", got)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestApplyMergesContainersByName(t *testing.T) {
	e := newTestEnv(t)
	base := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: %s
        image: %s
        ports:
        - containerPort: 80
`
	e.apply(deployPath("default", "web"), "alice", strings.NewReplacer("%s", "app").Replace(base)).expect(t, 201, "")
	r := e.apply(deployPath("default", "web"), "bob", `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
      - name: sidecar
        image: busybox
`)
	r.expect(t, 200, "")
	var d appsv1.Deployment
	r.decode(t, &d)
	cs := d.Spec.Template.Spec.Containers
	if len(cs) != 2 || cs[0].Name != "app" || cs[1].Name != "sidecar" {
		t.Fatalf("containers %+v", cs)
	}
	// Defaults still apply to what the merge produced.
	if cs[1].TerminationMessagePath == "" || cs[0].Ports[0].Protocol != corev1.ProtocolTCP {
		t.Fatalf("merged containers are not defaulted: %+v", cs)
	}
	// bob owns only his container, keyed by name.
	for _, e := range d.ManagedFields {
		if e.Manager == "bob" && !strings.Contains(e.FieldsV1.GetRawString(), `k:{\"name\":\"sidecar\"}`) {
			t.Fatalf("bob's fields %s", e.FieldsV1.GetRawString())
		}
	}
	// A port applied without its protocol is keyed with the default.
	for _, e := range d.ManagedFields {
		if e.Manager == "alice" && !strings.Contains(e.FieldsV1.GetRawString(), `k:{\"containerPort\":80,\"protocol\":\"TCP\"}`) {
			t.Fatalf("alice's fields %s", e.FieldsV1.GetRawString())
		}
	}
}

func TestApplyRefusesBadInput(t *testing.T) {
	e := newTestEnv(t)
	e.apply(cmPath+"/cm", "alice", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: one\n").expect(t, 201, "")
	tests := []struct {
		name, path, manager, body string
		query                     []string
		code                      int
		reason                    metav1.StatusReason
		message                   string
	}{
		{name: "no fieldManager", path: cmPath + "/cm", body: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
			code: 422, reason: metav1.StatusReasonInvalid,
			message: `PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch`},
		{name: "managedFields set", path: cmPath + "/cm", manager: "x",
			body: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  managedFields:\n  - manager: x\n",
			code: 400, reason: metav1.StatusReasonBadRequest, message: "metadata.managedFields must be nil"},
		{name: "wrong kind", path: cmPath + "/cm", manager: "x", body: "apiVersion: v1\nkind: Secret\nmetadata:\n  name: cm\n",
			code: 400, reason: metav1.StatusReasonBadRequest, message: "invalid object type: /v1, Kind=Secret"},
		{name: "no kind", path: cmPath + "/cm", manager: "x", body: "metadata:\n  name: cm\n",
			code: 400, reason: metav1.StatusReasonBadRequest, message: "invalid object type: /, Kind="},
		{name: "wrong name", path: cmPath + "/cm", manager: "x", body: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n",
			code: 400, reason: metav1.StatusReasonBadRequest, message: "the name of the object (other) does not match the name on the URL (cm)"},
		{name: "not YAML", path: cmPath + "/cm", manager: "x", body: "apiVersion: v1\n kind: [\n",
			code: 400, reason: metav1.StatusReasonBadRequest, message: "error decoding YAML: "},
		{name: "unknown field", path: cmPath + "/cm", manager: "x", body: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\nspec: {}\n",
			code: 400, reason: metav1.StatusReasonBadRequest, message: "failed to create typed patch object (/cm; /v1, Kind=ConfigMap): .spec: field not declared in schema"},
		{name: "wrong type", path: cmPath + "/cm", manager: "x", body: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata: [1]\n",
			code: 400, reason: metav1.StatusReasonBadRequest, message: "failed to create typed patch object"},
		{name: "duplicate field under Strict", path: cmPath + "/cm", manager: "x", query: []string{"fieldValidation=Strict"},
			body: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: one\n  a: two\n",
			code: 400, reason: metav1.StatusReasonBadRequest, message: "error strict decoding YAML: "},
		{name: "force not a bool", path: cmPath + "/cm", manager: "x", query: []string{"force=maybe"},
			body: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n", code: 400, reason: metav1.StatusReasonBadRequest, message: "force"},
		{name: "subresource of a missing object", path: deployPath("default", "nope") + "/status", manager: "x",
			body: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: nope\n", code: 404, reason: metav1.StatusReasonNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.apply(tc.path, tc.manager, tc.body, tc.query...)
			r.expect(t, tc.code, tc.reason)
			if st := r.status(t); !strings.Contains(st.Message, tc.message) {
				t.Fatalf("message %q, want it to contain %q", st.Message, tc.message)
			}
		})
	}
	// Nothing was changed by any of them.
	var cm corev1.ConfigMap
	e.do("GET", cmPath+"/cm", nil).decode(t, &cm)
	if len(cm.Data) != 1 || cm.Data["a"] != "one" || len(cm.ManagedFields) != 1 {
		t.Fatalf("stored object changed: %+v", cm)
	}
	// force is refused on other patches.
	r := e.do("PATCH", cmPath+"/cm?force=true", `{"data":{"a":"b"}}`, "Content-Type", "application/merge-patch+json")
	r.expect(t, 422, metav1.StatusReasonInvalid)
}

func TestApplyDryRunStoresNothing(t *testing.T) {
	e := newTestEnv(t)
	r := e.apply(cmPath+"/dry", "alice", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dry\ndata:\n  a: one\n", "dryRun=All")
	r.expect(t, 201, "")
	if cm := configMap(t, r); cm.Data["a"] != "one" || len(cm.ManagedFields) != 1 {
		t.Fatalf("dry-run answer %+v", cm)
	}
	e.do("GET", cmPath+"/dry", nil).expect(t, 404, metav1.StatusReasonNotFound)
}

func TestManagedFieldsOnWrites(t *testing.T) {
	e := newTestEnv(t)
	// A create without fieldManager is recorded under its user agent's
	// first word.
	r := e.do("POST", deployPath("default", ""), testDeployment("d", 1), "User-Agent", "deployer/1.2 (linux)")
	r.expect(t, 201, "")
	var d appsv1.Deployment
	r.decode(t, &d)
	if len(d.ManagedFields) != 1 || d.ManagedFields[0].Manager != "deployer" || d.ManagedFields[0].Operation != metav1.ManagedFieldsOperationUpdate ||
		d.ManagedFields[0].APIVersion != "apps/v1" || d.ManagedFields[0].Subresource != "" {
		t.Fatalf("managedFields after create: %+v", d.ManagedFields)
	}
	// The status is never owned through the resource itself.
	if strings.Contains(d.ManagedFields[0].FieldsV1.GetRawString(), "f:status") {
		t.Fatalf("status owned through the resource: %s", d.ManagedFields[0].FieldsV1.GetRawString())
	}
	// A write through scale is owned by its manager with subresource scale.
	r = e.do("PUT", deployPath("default", "d")+"/scale?fieldManager=scaler",
		`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"d","namespace":"default"},"spec":{"replicas":5}}`)
	r.expect(t, 200, "")
	e.do("GET", deployPath("default", "d"), nil).decode(t, &d)
	got := owners(t, d.ObjectMeta)
	if got["scaler/Update/scale"] != `{"f:spec":{"f:replicas":{}}}` {
		t.Fatalf("after scale: owners %v", got)
	}
	if strings.Contains(got["deployer/Update"], "f:replicas") {
		t.Fatalf("replicas still owned by the creator: %v", got)
	}
	// A status write is owned with subresource status.
	d.Status.ObservedGeneration = 1
	r = e.do("PUT", deployPath("default", "d")+"/status?fieldManager=ctrl", &d)
	r.expect(t, 200, "")
	r.decode(t, &d)
	if got := owners(t, d.ObjectMeta); got["ctrl/Update/status"] != `{"f:status":{"f:observedGeneration":{}}}` {
		t.Fatalf("after status: owners %v", got)
	}
	// An update that sends an empty list resets managedFields; one that
	// sends none keeps them.
	d.ManagedFields = nil
	d.Labels = map[string]string{"x": "y"}
	r = e.do("PUT", deployPath("default", "d")+"?fieldManager=labeler", &d)
	r.expect(t, 200, "")
	r.decode(t, &d)
	if len(d.ManagedFields) != 4 {
		t.Fatalf("an update without managedFields lost them: %+v", owners(t, d.ObjectMeta))
	}
	body, _ := json.Marshal(&d)
	body = []byte(strings.Replace(string(body), `"managedFields":[`, `"managedFields":[],"x":[`, 1))
	r = e.do("PUT", deployPath("default", "d"), body)
	r.expect(t, 200, "")
	d = appsv1.Deployment{}
	r.decode(t, &d)
	if len(d.ManagedFields) != 0 {
		t.Fatalf("managedFields: [] did not reset them: %+v", d.ManagedFields)
	}
	// Tracking resumes at the next apply, which first gives what the
	// object holds to before-first-apply.
	r = e.apply(deployPath("default", "d"), "alice", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n  labels:\n    team: a\n")
	r.expect(t, 200, "")
	r.decode(t, &d)
	if got := owners(t, d.ObjectMeta); got["before-first-apply/Update"] == "" || got["alice/Apply"] != `{"f:metadata":{"f:labels":{"f:team":{}}}}` {
		t.Fatalf("first apply after reset: owners %v", got)
	}
}

func TestApplyCustomResource(t *testing.T) {
	e := newTestEnv(t)
	e.runControllers()
	e.createCRD(testCRD())
	r := e.apply(widgetsPath+"/w", "alice", "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  color: red\n  replicas: 2\n")
	r.expect(t, 201, "")
	r = e.apply(widgetsPath+"/w", "bob", "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  color: blue\n")
	r.expect(t, 409, metav1.StatusReasonConflict)
	if st := r.status(t); st.Message != `Apply failed with 1 conflict: conflict with "alice": .spec.color` {
		t.Fatalf("message %q", st.Message)
	}
	// The status through the status subresource.
	r = e.apply(widgetsPath+"/w/status", "ctrl", "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nstatus:\n  replicas: 2\n")
	r.expect(t, 200, "")
	u := r.decodeU(t)
	if got, _, _ := unstructured.NestedInt64(u.Object, "status", "replicas"); got != 2 {
		t.Fatalf("status %v", u.Object["status"])
	}
	found := false
	for _, e := range u.GetManagedFields() {
		if e.Manager == "ctrl" && e.Subresource == "status" && e.Operation == metav1.ManagedFieldsOperationApply {
			found = true
		}
	}
	if !found {
		t.Fatalf("status applier missing: %+v", u.GetManagedFields())
	}
	// A field the schema does not declare is refused.
	r = e.apply(widgetsPath+"/w", "alice", "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  colour: red\n")
	r.expect(t, 400, metav1.StatusReasonBadRequest)
}

func TestApplyThatCreatesNeedsCreatePermission(t *testing.T) {
	e := newAuthEnv(t, func(cfg *Config, x authentication.Authenticator) {
		cfg.Authenticator = x
		cfg.Authorizer = authorization.AuthorizerFunc(func(_ context.Context, a authorization.Attributes) (authorization.Decision, string, error) {
			if a.User.Name == "admin" || a.User.Name == "patcher" && a.Verb == "patch" {
				return authorization.DecisionAllow, "", nil
			}
			return authorization.DecisionDeny, "denied by test", nil
		})
	})
	patcher := e.client(e.user("patcher"))
	body := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: one\n"
	r := e.do(patcher, "PATCH", cmPath+"/cm?fieldManager=p", body, "Content-Type", applyType)
	r.expect(t, 403, metav1.StatusReasonForbidden)
	if want := `configmaps "cm" is forbidden: User "patcher" cannot create resource "configmaps" in API group "" in the namespace "default": denied by test`; r.status(t).Message != want {
		t.Fatalf("message %q, want %q", r.status(t).Message, want)
	}
	e.do(e.client(e.user("admin")), "PATCH", cmPath+"/cm?fieldManager=admin", body, "Content-Type", applyType).expect(t, 201, "")
	// Once it exists, patch permission is enough.
	e.do(patcher, "PATCH", cmPath+"/cm?fieldManager=p&force=true", strings.Replace(body, "one", "two", 1), "Content-Type", applyType).expect(t, 200, "")
}

func TestServerSideApplyTakesOverClientSideApply(t *testing.T) {
	e := newTestEnv(t)
	// What kubectl apply (client-side) writes: the object with its
	// configuration in the last-applied annotation.
	last := `{"apiVersion":"v1","data":{"a":"one","b":"one"},"kind":"ConfigMap","metadata":{"name":"cm","namespace":"default"}}`
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Annotations: map[string]string{fieldmanagerLastApplied: last}},
		Data: map[string]string{"a": "one", "b": "one"}}
	e.do("POST", cmPath+"?fieldManager=kubectl-client-side-apply", cm).expect(t, 201, "")
	// Someone else changes b since.
	e.do("PATCH", cmPath+"/cm?fieldManager=editor", `{"data":{"b":"edited"}}`, "Content-Type", "application/merge-patch+json").expect(t, 200, "")

	// kubectl apply --server-side changing both: a still holds what the
	// client-side apply set, so kubectl may take it; b was changed by
	// the editor, a real conflict.
	config := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: two\n  b: two\n"
	r := e.apply(cmPath+"/cm", "kubectl", config)
	r.expect(t, 409, metav1.StatusReasonConflict)
	if st := r.status(t); !strings.Contains(st.Message, `conflict with "editor" using v1: .data.b`) || strings.Contains(st.Message, ".data.a") {
		t.Fatalf("message %q", st.Message)
	}
	// Without b, the apply goes through and the annotation follows it.
	r = e.apply(cmPath+"/cm", "kubectl", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: two\n")
	r.expect(t, 200, "")
	got := configMap(t, r)
	if got.Data["a"] != "two" {
		t.Fatalf("data %v", got.Data)
	}
	if ann := got.Annotations[fieldmanagerLastApplied]; !strings.Contains(ann, `"a":"two"`) {
		t.Fatalf("last-applied %q", ann)
	}
	if o := owners(t, got.ObjectMeta); o["kubectl/Apply"] != `{"f:data":{"f:a":{}}}` || strings.Contains(o["kubectl-client-side-apply/Update"], `"f:a":{}`) {
		t.Fatalf("owners %v", o)
	}
	// Any other manager still conflicts on a: the exception is kubectl's.
	r = e.apply(cmPath+"/cm", "other", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: three\n")
	r.expect(t, 409, metav1.StatusReasonConflict)
}

const fieldmanagerLastApplied = "kubectl.kubernetes.io/last-applied-configuration"

func TestApplyThroughScaleAndWarnings(t *testing.T) {
	e := newTestEnv(t)
	e.mustCreate(deployPath("default", ""), testDeployment("d", 1), nil)
	// A Scale applied through the scale subresource sets the replicas
	// and is owned as an apply with subresource scale.
	// The creator owns the replicas: the scaler has to force.
	r := e.apply(deployPath("default", "d")+"/scale", "hpa", "apiVersion: autoscaling/v1\nkind: Scale\nmetadata:\n  name: d\nspec:\n  replicas: 4\n", "force=true")
	r.expect(t, 200, "")
	var sc map[string]any
	r.decode(t, &sc)
	if sc["kind"] != "Scale" {
		t.Fatalf("answer %v", sc)
	}
	var d appsv1.Deployment
	e.do("GET", deployPath("default", "d"), nil).decode(t, &d)
	if *d.Spec.Replicas != 4 {
		t.Fatalf("replicas %d", *d.Spec.Replicas)
	}
	if got := owners(t, d.ObjectMeta); got["hpa/Apply/scale"] != `{"f:spec":{"f:replicas":{}}}` {
		t.Fatalf("owners %v", got)
	}
	// A Deployment is not a Scale.
	e.apply(deployPath("default", "d")+"/scale", "hpa", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n").expect(t, 400, metav1.StatusReasonBadRequest)
	// Under Warn (the default), a duplicate field is a warning.
	r = e.apply(cmPath+"/cm", "alice", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: one\n  a: two\n")
	r.expect(t, 201, "")
	if w := r.header.Get("Warning"); !strings.Contains(w, `key \"a\" already set in map`) {
		t.Fatalf("warning %q", w)
	}
}
