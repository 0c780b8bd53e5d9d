package apiserver

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCreateFillsSystemFieldsAndDefaults(t *testing.T) {
	e := newTestEnv(t)
	var got corev1.Pod
	e.mustCreate(podPath("default", ""), testPod("p1", nil), &got)
	if got.UID == "" || got.ResourceVersion == "" || got.Generation != 1 {
		t.Fatalf("system fields not set: %+v", got.ObjectMeta)
	}
	if !got.CreationTimestamp.Time.Equal(e.clock.Now()) {
		t.Errorf("creationTimestamp %v, want %v", got.CreationTimestamp, e.clock.Now())
	}
	if got.Kind != "Pod" || got.APIVersion != "v1" {
		t.Errorf("type meta %+v", got.TypeMeta)
	}
	if got.Spec.RestartPolicy != corev1.RestartPolicyAlways || *got.Spec.TerminationGracePeriodSeconds != 30 ||
		got.Spec.Containers[0].ImagePullPolicy != corev1.PullIfNotPresent || got.Status.Phase != corev1.PodPending {
		t.Errorf("defaults not applied: %+v", got.Spec)
	}
	var fetched corev1.Pod
	e.do("GET", podPath("default", "p1"), nil).decode(t, &fetched)
	if diff := cmp.Diff(got, fetched); diff != "" {
		t.Errorf("get differs from create (-create +get):\n%s", diff)
	}
}

func TestCreateClearsClientOwnedFields(t *testing.T) {
	e := newTestEnv(t)
	pod := testPod("p1", nil)
	pod.UID = "client-uid"
	pod.Status.Phase = corev1.PodRunning
	now := metav1.Now()
	pod.DeletionTimestamp = &now
	// managedFields that do not decode are replaced by the creator's.
	pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "x"}}
	var got corev1.Pod
	e.mustCreate(podPath("default", ""), pod, &got)
	if got.UID == "client-uid" || got.Status.Phase != corev1.PodPending || got.DeletionTimestamp != nil {
		t.Fatalf("client-owned fields kept: %+v %+v", got.ObjectMeta, got.Status)
	}
	if len(got.ManagedFields) != 1 || got.ManagedFields[0].Manager != "Go-http-client" || got.ManagedFields[0].Operation != metav1.ManagedFieldsOperationUpdate {
		t.Fatalf("managedFields %+v", got.ManagedFields)
	}
}

func TestCreateErrors(t *testing.T) {
	huge := `{"metadata":{"name":"big","annotations":{"a":"` + strings.Repeat("x", 3<<20) + `"}}}`
	noContainers := testPod("p", nil)
	noContainers.Spec.Containers = nil
	tests := []struct {
		name    string
		path    string
		body    any
		headers []string
		code    int
		reason  metav1.StatusReason
		cause   string // a field that must be named in the causes
	}{
		{name: "already exists", path: podPath("default", ""), body: testPod("dup", nil), code: 409, reason: metav1.StatusReasonAlreadyExists},
		{name: "invalid name", path: podPath("default", ""), body: testPod("Bad_Name", nil), code: 422, reason: metav1.StatusReasonInvalid, cause: "metadata.name"},
		{name: "missing containers", path: podPath("default", ""), body: noContainers, code: 422, reason: metav1.StatusReasonInvalid, cause: "spec.containers"},
		{name: "bad label", path: podPath("default", ""), body: testPod("p", map[string]string{"a b": "c"}), code: 422, reason: metav1.StatusReasonInvalid, cause: "metadata.labels"},
		{name: "missing namespace", path: podPath("nope", ""), body: testPod("p", nil), code: 404, reason: metav1.StatusReasonNotFound},
		{name: "namespace mismatch", path: podPath("default", ""), body: `{"metadata":{"name":"p","namespace":"other"}}`, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "malformed json", path: podPath("default", ""), body: `{"metadata":`, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "wrong kind", path: podPath("default", ""), body: `{"kind":"Service","apiVersion":"v1","metadata":{"name":"p"}}`, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "wrong version", path: podPath("default", ""), body: `{"kind":"Pod","apiVersion":"v2","metadata":{"name":"p"}}`, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "resourceVersion set", path: podPath("default", ""), body: `{"metadata":{"name":"p","resourceVersion":"5"},"spec":{"containers":[{"name":"c","image":"i"}]}}`, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "too large", path: podPath("default", ""), body: huge, code: 413, reason: metav1.StatusReasonRequestEntityTooLarge},
		{name: "unsupported media type", path: podPath("default", ""), body: `x`, headers: []string{"Content-Type", "text/plain"}, code: 415, reason: metav1.StatusReasonUnsupportedMediaType},
		{name: "bad protobuf", path: podPath("default", ""), body: `x`, headers: []string{"Content-Type", "application/vnd.kubernetes.protobuf"}, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "not acceptable", path: podPath("default", ""), body: testPod("p", nil), headers: []string{"Accept", "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io"}, code: 406, reason: metav1.StatusReasonNotAcceptable},
		{name: "strict unknown field", path: podPath("default", "") + "?fieldValidation=Strict", body: `{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i"}],"bogus":1}}`, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "strict duplicate field", path: podPath("default", "") + "?fieldValidation=Strict", body: `{"metadata":{"name":"p","name":"q"},"spec":{"containers":[{"name":"c","image":"i"}]}}`, code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "bad fieldValidation", path: podPath("default", "") + "?fieldValidation=Loud", body: testPod("p", nil), code: 422, reason: metav1.StatusReasonInvalid},
		{name: "bad dryRun", path: podPath("default", "") + "?dryRun=Some", body: testPod("p", nil), code: 422, reason: metav1.StatusReasonInvalid},
		{name: "post with name", path: podPath("default", "p"), body: testPod("p", nil), code: 405, reason: metav1.StatusReasonMethodNotAllowed},
		// The all-namespaces path serves list and watch only: kube-apiserver
		// answers a POST there with 405, as for any method a path lacks.
		{name: "namespaced without namespace", path: "/api/v1/pods", body: testPod("p", nil), code: 405, reason: metav1.StatusReasonMethodNotAllowed},
		{name: "unknown resource", path: "/api/v1/namespaces/default/widgets", body: testPod("p", nil), code: 404, reason: metav1.StatusReasonNotFound},
		{name: "deployment selector mismatch", path: deployPath("default", ""), body: func() any {
			d := testDeployment("d", 1)
			d.Spec.Template.Labels = map[string]string{"app": "other"}
			return d
		}(), code: 422, reason: metav1.StatusReasonInvalid, cause: "spec.template.metadata.labels"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t)
			e.mustCreate(podPath("default", ""), testPod("dup", nil), nil)
			before := e.do("GET", "/api/v1/pods", nil)
			r := e.do("POST", tc.path, tc.body, tc.headers...)
			r.expect(t, tc.code, tc.reason)
			if tc.cause != "" {
				st := r.status(t)
				found := false
				for _, c := range st.Details.Causes {
					found = found || strings.HasPrefix(c.Field, tc.cause)
				}
				if !found {
					t.Errorf("causes %+v do not name %s", st.Details.Causes, tc.cause)
				}
			}
			after := e.do("GET", "/api/v1/pods", nil)
			if string(before.body) != string(after.body) {
				t.Errorf("a failed create changed storage:\nbefore %s\nafter  %s", before.body, after.body)
			}
		})
	}
}

func TestCreateGenerateName(t *testing.T) {
	e := newTestEnv(t)
	pod := testPod("", nil)
	pod.GenerateName = "web-"
	seen := map[string]bool{}
	for range 5 {
		var got corev1.Pod
		e.mustCreate(podPath("default", ""), pod, &got)
		if !strings.HasPrefix(got.Name, "web-") || len(got.Name) != len("web-")+5 || seen[got.Name] {
			t.Fatalf("generated name %q", got.Name)
		}
		seen[got.Name] = true
	}
}

func TestCreateFieldValidation(t *testing.T) {
	body := `{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i","bogus":true}]},"extra":1}`
	for _, tc := range []struct {
		level    string
		warnings []string
	}{
		{level: "", warnings: []string{`299 - "unknown field \"extra\""`, `299 - "unknown field \"spec.containers[0].bogus\""`}},
		{level: "Warn", warnings: []string{`299 - "unknown field \"extra\""`, `299 - "unknown field \"spec.containers[0].bogus\""`}},
		{level: "Ignore"},
	} {
		t.Run("level="+tc.level, func(t *testing.T) {
			e := newTestEnv(t)
			path := podPath("default", "")
			if tc.level != "" {
				path += "?fieldValidation=" + tc.level
			}
			r := e.do("POST", path, body)
			r.expect(t, 201, "")
			got := r.header.Values("Warning")
			sortStrings(got)
			if diff := cmp.Diff(tc.warnings, got); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCreateDryRunStoresNothing(t *testing.T) {
	e := newTestEnv(t)
	var got corev1.Pod
	r := e.do("POST", podPath("default", "")+"?dryRun=All", testPod("p1", nil))
	r.expect(t, 201, "")
	r.decode(t, &got)
	if got.Name != "p1" || got.Spec.DNSPolicy != corev1.DNSClusterFirst {
		t.Fatalf("dry run answer not defaulted: %+v", got)
	}
	e.do("GET", podPath("default", "p1"), nil).expect(t, 404, metav1.StatusReasonNotFound)
}

func TestCreateYAMLAndProtobuf(t *testing.T) {
	e := newTestEnv(t)
	yamlBody := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n  k: v\n"
	e.do("POST", "/api/v1/namespaces/default/configmaps", yamlBody, "Content-Type", "application/yaml").expect(t, 201, "")

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "pb"}, Data: map[string]string{"k": "v"}}
	raw, err := cm.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	env := encodeProtobufEnvelope(t, "v1", "ConfigMap", raw)
	r := e.do("POST", "/api/v1/namespaces/default/configmaps", env, "Content-Type", protobufType,
		"Accept", "application/vnd.kubernetes.protobuf, application/json")
	r.expect(t, 201, "")
	var got corev1.ConfigMap
	if err := decodeProtobuf(r.body, &got, corev1.SchemeGroupVersion.WithKind("ConfigMap")); err != nil || r.header.Get("Content-Type") != protobufType {
		t.Fatalf("protobuf create answer (%s): %v", r.header.Get("Content-Type"), err)
	}
	if got.Data["k"] != "v" || got.Name != "pb" {
		t.Fatalf("protobuf create stored %+v", got)
	}
	r = e.do("GET", "/api/v1/namespaces/default/configmaps/from-yaml", nil, "Accept", "application/yaml")
	r.expect(t, 200, "")
	if !strings.Contains(string(r.body), "kind: ConfigMap") || r.header.Get("Content-Type") != "application/yaml" {
		t.Errorf("yaml answer: %s %s", r.header.Get("Content-Type"), r.body)
	}
}
