package apiserver

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPatchTypes(t *testing.T) {
	tests := []struct {
		name        string
		contentType string
		patch       string
		check       func(t *testing.T, d *appsv1.Deployment)
	}{
		{
			name: "merge", contentType: "application/merge-patch+json",
			patch: `{"metadata":{"labels":{"tier":"fe"}},"spec":{"replicas":3}}`,
			check: func(t *testing.T, d *appsv1.Deployment) {
				if d.Labels["tier"] != "fe" || *d.Spec.Replicas != 3 {
					t.Errorf("merge patch result %v %d", d.Labels, *d.Spec.Replicas)
				}
			},
		},
		{
			name: "json", contentType: "application/json-patch+json",
			patch: `[{"op":"test","path":"/spec/replicas","value":1},{"op":"replace","path":"/spec/replicas","value":4},{"op":"add","path":"/metadata/labels","value":{"a":"b"}}]`,
			check: func(t *testing.T, d *appsv1.Deployment) {
				if *d.Spec.Replicas != 4 || d.Labels["a"] != "b" {
					t.Errorf("json patch result %v %d", d.Labels, *d.Spec.Replicas)
				}
			},
		},
		{
			name: "strategic merges containers by name", contentType: "application/strategic-merge-patch+json",
			patch: `{"spec":{"template":{"spec":{"containers":[{"name":"side","image":"busybox"}]}}}}`,
			check: func(t *testing.T, d *appsv1.Deployment) {
				cs := d.Spec.Template.Spec.Containers
				if len(cs) != 2 || cs[0].Name != "c" && cs[1].Name != "c" {
					t.Errorf("strategic merge lost a container: %+v", cs)
				}
				if d.Generation != 2 {
					t.Errorf("generation %d after spec patch", d.Generation)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t)
			e.mustCreate(deployPath("default", ""), testDeployment("d", 1), nil)
			r := e.do("PATCH", deployPath("default", "d"), tc.patch, "Content-Type", tc.contentType)
			r.expect(t, 200, "")
			var d appsv1.Deployment
			r.decode(t, &d)
			tc.check(t, &d)
			var got appsv1.Deployment
			e.do("GET", deployPath("default", "d"), nil).decode(t, &got)
			tc.check(t, &got)
		})
	}
}

func TestPatchErrorsStoreNothing(t *testing.T) {
	tests := []struct {
		name, contentType, patch string
		code                     int
		reason                   metav1.StatusReason
	}{
		{"invalid result", "application/merge-patch+json", `{"spec":{"replicas":-1}}`, 422, metav1.StatusReasonInvalid},
		{"selector mismatch", "application/merge-patch+json", `{"spec":{"template":{"metadata":{"labels":{"app":"zzz"}}}}}`, 422, metav1.StatusReasonInvalid},
		{"malformed json", "application/merge-patch+json", `{"spec":`, 400, metav1.StatusReasonBadRequest},
		{"bad json patch op", "application/json-patch+json", `[{"op":"jump","path":"/x"}]`, 422, metav1.StatusReasonInvalid},
		{"json patch test fails", "application/json-patch+json", `[{"op":"test","path":"/spec/replicas","value":9}]`, 422, metav1.StatusReasonInvalid},
		{"json patch missing path", "application/json-patch+json", `[{"op":"remove","path":"/spec/nothing"}]`, 422, metav1.StatusReasonInvalid},
		{"stale resourceVersion", "application/merge-patch+json", `{"metadata":{"resourceVersion":"1"},"spec":{"replicas":2}}`, 409, metav1.StatusReasonConflict},
		{"server-side apply without fieldManager", "application/apply-patch+yaml", `{}`, 422, metav1.StatusReasonInvalid},
		{"unknown type", "text/plain", `{}`, 415, metav1.StatusReasonUnsupportedMediaType},
		{"strict unknown field", "application/merge-patch+json", `{"spec":{"bogus":1}}`, 400, metav1.StatusReasonBadRequest},
		{"rename", "application/merge-patch+json", `{"metadata":{"name":"other"}}`, 400, metav1.StatusReasonBadRequest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t)
			var d appsv1.Deployment
			e.mustCreate(deployPath("default", ""), testDeployment("d", 1), &d)
			path := deployPath("default", "d")
			if tc.name == "strict unknown field" {
				path += "?fieldValidation=Strict"
			}
			r := e.do("PATCH", path, tc.patch, "Content-Type", tc.contentType)
			if tc.reason == metav1.StatusReasonInvalid && tc.code == 422 {
				if r.code != 422 {
					t.Fatalf("got %d want 422: %s", r.code, r.body)
				}
			} else {
				r.expect(t, tc.code, tc.reason)
			}
			var got appsv1.Deployment
			e.do("GET", deployPath("default", "d"), nil).decode(t, &got)
			if got.ResourceVersion != d.ResourceVersion {
				t.Fatalf("failed patch wrote: rv %s -> %s", d.ResourceVersion, got.ResourceVersion)
			}
		})
	}
}

func TestPatchMissingObjectIs404(t *testing.T) {
	e := newTestEnv(t)
	e.do("PATCH", podPath("default", "nope"), `{}`, "Content-Type", "application/merge-patch+json").expect(t, 404, metav1.StatusReasonNotFound)
	e.do("PATCH", "/api/v1/namespaces/default/events/nope", `{}`, "Content-Type", "application/merge-patch+json").expect(t, 404, metav1.StatusReasonNotFound)
}

func TestPatchStatusWarnsOnUnknownFields(t *testing.T) {
	e := newTestEnv(t)
	e.mustCreate(podPath("default", ""), testPod("p", nil), nil)
	r := e.do("PATCH", podPath("default", "p")+"/status", `{"status":{"phase":"Running","bogus":1},"spec":{"nodeName":"n1"}}`, "Content-Type", "application/merge-patch+json")
	r.expect(t, 200, "")
	if w := r.header.Values("Warning"); len(w) != 1 || w[0] != `299 - "unknown field \"status.bogus\""` {
		t.Errorf("warnings %q", w)
	}
	var p corev1.Pod
	r.decode(t, &p)
	if p.Status.Phase != corev1.PodRunning || p.Spec.NodeName != "" {
		t.Fatalf("status patch: phase %s nodeName %q", p.Status.Phase, p.Spec.NodeName)
	}
}
