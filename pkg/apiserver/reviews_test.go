package apiserver

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSelfReviews(t *testing.T) {
	e := newTestEnv(t)
	const (
		sarPath = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
		srrPath = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"
		ssrPath = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
	)
	t.Run("access review is allowed", func(t *testing.T) {
		for _, spec := range []authorizationv1.SelfSubjectAccessReviewSpec{
			{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Namespace: "default"}},
			{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/healthz"}},
		} {
			r := e.do("POST", sarPath, &authorizationv1.SelfSubjectAccessReview{Spec: spec})
			r.expect(t, 201, "")
			var got authorizationv1.SelfSubjectAccessReview
			r.decode(t, &got)
			if !got.Status.Allowed || got.Kind != "SelfSubjectAccessReview" || got.APIVersion != "authorization.k8s.io/v1" {
				t.Errorf("review %+v", got)
			}
			if diff := cmp.Diff(spec, got.Spec); diff != "" {
				t.Errorf("spec changed (-sent +got):\n%s", diff)
			}
		}
	})
	t.Run("access review needs exactly one attribute set", func(t *testing.T) {
		for _, spec := range []authorizationv1.SelfSubjectAccessReviewSpec{
			{},
			{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get"}, NonResourceAttributes: &authorizationv1.NonResourceAttributes{Verb: "get"}},
		} {
			r := e.do("POST", sarPath, &authorizationv1.SelfSubjectAccessReview{Spec: spec})
			r.expect(t, 422, metav1.StatusReasonInvalid)
			if st := r.status(t); st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != "spec.resourceAttributes" {
				t.Errorf("status %+v", st)
			}
		}
	})
	t.Run("rules review allows everything", func(t *testing.T) {
		r := e.do("POST", srrPath, &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "default"}})
		r.expect(t, 201, "")
		var got authorizationv1.SelfSubjectRulesReview
		r.decode(t, &got)
		want := authorizationv1.SubjectRulesReviewStatus{
			ResourceRules:    []authorizationv1.ResourceRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}},
			NonResourceRules: []authorizationv1.NonResourceRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
		}
		if diff := cmp.Diff(want, got.Status); diff != "" {
			t.Errorf("status (-want +got):\n%s", diff)
		}
	})
	t.Run("who am I without a certificate", func(t *testing.T) {
		r := e.do("POST", ssrPath, &authenticationv1.SelfSubjectReview{})
		r.expect(t, 201, "")
		var got authenticationv1.SelfSubjectReview
		r.decode(t, &got)
		want := authenticationv1.UserInfo{Username: "system:anonymous", Groups: []string{"system:unauthenticated"}}
		if diff := cmp.Diff(want, got.Status.UserInfo); diff != "" {
			t.Errorf("user (-want +got):\n%s", diff)
		}
	})
	t.Run("only create", func(t *testing.T) {
		for _, p := range []string{sarPath, srrPath, ssrPath} {
			r := e.do("GET", p, nil)
			r.expect(t, 405, metav1.StatusReasonMethodNotAllowed)
			if st := r.status(t); st.Message != "the server does not allow this method on the requested resource" {
				t.Errorf("GET %s: %q", p, st.Message)
			}
			e.do("GET", p+"/x", nil).expect(t, 404, metav1.StatusReasonNotFound)
		}
	})
	t.Run("malformed body", func(t *testing.T) {
		e.do("POST", sarPath, "{").expect(t, 400, metav1.StatusReasonBadRequest)
		e.do("POST", sarPath, `{"spec":{"resourceAttributes":{"verb":"get"}},"bogus":1}`).expect(t, 201, "")
		e.do("POST", sarPath+"?fieldValidation=Strict", `{"spec":{"resourceAttributes":{"verb":"get"}},"bogus":1}`).expect(t, 400, metav1.StatusReasonBadRequest)
	})
	t.Run("discovery", func(t *testing.T) {
		var list metav1.APIResourceList
		e.do("GET", "/apis/authorization.k8s.io/v1", nil).decode(t, &list)
		var names []string
		for _, r := range list.APIResources {
			if r.Namespaced != (r.Name == "localsubjectaccessreviews") || len(r.Verbs) != 1 || r.Verbs[0] != "create" {
				t.Errorf("resource %+v", r)
			}
			names = append(names, r.Name)
		}
		want := []string{"localsubjectaccessreviews", "selfsubjectaccessreviews", "selfsubjectrulesreviews", "subjectaccessreviews"}
		if diff := cmp.Diff(want, names); diff != "" {
			t.Errorf("resources (-want +got):\n%s", diff)
		}
	})
}
