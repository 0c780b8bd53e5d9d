package apiserver

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPatchBodyErrorWording checks that a patch body that does not decode
// gets kube-apiserver's 400 answer, word for word, for each patch type and
// field validation directive, and that nothing is stored.
func TestPatchBodyErrorWording(t *testing.T) {
	const (
		jsonPatch  = "application/json-patch+json"
		mergePatch = "application/merge-patch+json"
		smPatch    = "application/strategic-merge-patch+json"
		notJSON    = "invalid character 'o' in literal null (expecting 'u')"
	)
	tests := []struct {
		name, contentType, validation, body, message string
	}{
		{"json patch not JSON", jsonPatch, "", "not json", "error decoding patch: " + notJSON},
		{"json patch not JSON strict", jsonPatch, "Strict", "not json", "error decoding patch: " + notJSON},
		{"json patch not JSON ignore", jsonPatch, "Ignore", "not json", notJSON},
		{"json patch object", jsonPatch, "", `{"op":"add"}`, "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp"},
		{"json patch object ignore", jsonPatch, "Ignore", `{"op":"add"}`, "json: cannot unmarshal object into Go value of type jsonpatch.Patch"},
		{"json patch list of numbers ignore", jsonPatch, "Ignore", `[1]`, "json: cannot unmarshal number into Go value of type jsonpatch.Operation"},
		{"json patch op not a string", jsonPatch, "Warn", `[{"op":1,"path":"/x"}]`, "error decoding patch: json: cannot unmarshal number into Go struct field jsonPatchOp.op of type string"},
		{"merge patch not JSON", mergePatch, "", "not json", "error decoding patch: " + notJSON},
		{"merge patch truncated", mergePatch, "Strict", `{"spec":`, "error decoding patch: unexpected end of JSON input"},
		{"merge patch list", mergePatch, "", `[1]`, "error decoding patch: json: cannot unmarshal array into Go value of type map[string]interface {}"},
		{"merge patch not JSON ignore", mergePatch, "Ignore", "not json", "Invalid JSON Patch"},
		{"strategic patch not JSON", smPatch, "", "not json", notJSON},
		{"strategic patch not JSON ignore", smPatch, "Ignore", "not json", notJSON},
		{"strategic patch list", smPatch, "Strict", `[1]`, "json: cannot unmarshal array into Go value of type map[string]interface {}"},
	}
	e := newTestEnv(t)
	var before appsv1.Deployment
	e.mustCreate(deployPath("default", ""), testDeployment("d", 1), &before)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			query := ""
			if tc.validation != "" {
				query = "?fieldValidation=" + tc.validation
			}
			// The object and its subresources answer the same.
			for _, sub := range []string{"", "/status", "/scale"} {
				r := e.do("PATCH", deployPath("default", "d")+sub+query, tc.body, "Content-Type", tc.contentType)
				r.expect(t, 400, metav1.StatusReasonBadRequest)
				if st := r.status(t); st.Message != tc.message {
					t.Errorf("%s: message %q, want %q", sub, st.Message, tc.message)
				}
			}
		})
	}
	var after appsv1.Deployment
	e.do("GET", deployPath("default", "d"), nil).decode(t, &after)
	if after.ResourceVersion != before.ResourceVersion {
		t.Errorf("a rejected patch was stored: resourceVersion %s -> %s", before.ResourceVersion, after.ResourceVersion)
	}
}

// TestPatchBadBodyOfMissingObject checks that, as in kube-apiserver, a patch
// of an object that does not exist is NotFound whatever its body.
func TestPatchBadBodyOfMissingObject(t *testing.T) {
	e := newTestEnv(t)
	for _, ct := range []string{"application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json"} {
		e.do("PATCH", deployPath("default", "missing"), "not json", "Content-Type", ct).expect(t, 404, metav1.StatusReasonNotFound)
	}
}

// TestJSONPatchApplyErrorWording checks kube-apiserver's answers to JSON
// patches that decode but do not apply: 422 with the generic message (kube
// drops the cause), and 413 past the operation limit.
func TestJSONPatchApplyErrorWording(t *testing.T) {
	const rejected = "the server rejected our request due to an error in our request"
	tests := []struct {
		name, body string
		code       int
		reason     metav1.StatusReason
		message    string
	}{
		{"unknown op", `[{"op":"jump","path":"/x"}]`, 422, metav1.StatusReasonInvalid, rejected},
		{"missing op", `[{"path":"/x"}]`, 422, metav1.StatusReasonInvalid, rejected},
		{"unknown op after a good one", `[{"op":"add","path":"/metadata/labels/x","value":"y"},{"op":"Add","path":"/x"}]`, 422, metav1.StatusReasonInvalid, rejected},
		{"missing path", `[{"op":"add","value":1}]`, 422, metav1.StatusReasonInvalid, rejected},
		{"bad pointer", `[{"op":"add","path":"x","value":1}]`, 422, metav1.StatusReasonInvalid, rejected},
		{"remove missing", `[{"op":"remove","path":"/spec/nothing"}]`, 422, metav1.StatusReasonInvalid, rejected},
		{"op not a string", `[{"op":1,"path":"/x"}]`, 400, metav1.StatusReasonBadRequest, "error decoding patch: json: cannot unmarshal number into Go struct field jsonPatchOp.op of type string"},
		{"too many operations", "[" + strings.Repeat(`{"op":"test","path":"/kind","value":"Deployment"},`, 10000) + `{"op":"test","path":"/kind","value":"Deployment"}]`, 413, metav1.StatusReasonRequestEntityTooLarge,
			"Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"},
	}
	e := newTestEnv(t)
	var before appsv1.Deployment
	e.mustCreate(deployPath("default", ""), testDeployment("d", 1), &before)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("PATCH", deployPath("default", "d"), tc.body, "Content-Type", "application/json-patch+json")
			r.expect(t, tc.code, tc.reason)
			if st := r.status(t); st.Message != tc.message {
				t.Errorf("message %q, want %q", st.Message, tc.message)
			}
		})
	}
	var after appsv1.Deployment
	e.do("GET", deployPath("default", "d"), nil).decode(t, &after)
	if after.ResourceVersion != before.ResourceVersion {
		t.Errorf("a rejected patch was stored: resourceVersion %s -> %s", before.ResourceVersion, after.ResourceVersion)
	}
}
