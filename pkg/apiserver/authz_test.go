package apiserver

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/authentication"
	"github.com/kplane/kplane/pkg/authorization"
)

func TestForbiddenMessage(t *testing.T) {
	alice := &authentication.User{Name: "alice"}
	for _, tc := range []struct {
		name    string
		attrs   authorization.Attributes
		reason  string
		message string
		details *metav1.StatusDetails
	}{
		{name: "list in a namespace",
			attrs:   authorization.Attributes{User: alice, Verb: "list", ResourceRequest: true, Resource: "pods", Namespace: "default", APIVersion: "v1"},
			message: `pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"`,
			details: &metav1.StatusDetails{Kind: "pods"}},
		{name: "get of a named object",
			attrs:   authorization.Attributes{User: alice, Verb: "get", ResourceRequest: true, Resource: "pods", Name: "web", Namespace: "default"},
			message: `pods "web" is forbidden: User "alice" cannot get resource "pods" in API group "" in the namespace "default"`,
			details: &metav1.StatusDetails{Name: "web", Kind: "pods"}},
		{name: "subresource",
			attrs:   authorization.Attributes{User: alice, Verb: "get", ResourceRequest: true, Resource: "pods", Subresource: "log", Name: "web", Namespace: "ns1"},
			message: `pods "web" is forbidden: User "alice" cannot get resource "pods/log" in API group "" in the namespace "ns1"`,
			details: &metav1.StatusDetails{Name: "web", Kind: "pods"}},
		{name: "cluster scope in a group",
			attrs:   authorization.Attributes{User: alice, Verb: "create", ResourceRequest: true, APIGroup: "rbac.authorization.k8s.io", Resource: "clusterroles"},
			message: `clusterroles.rbac.authorization.k8s.io is forbidden: User "alice" cannot create resource "clusterroles" in API group "rbac.authorization.k8s.io" at the cluster scope`,
			details: &metav1.StatusDetails{Group: "rbac.authorization.k8s.io", Kind: "clusterroles"}},
		{name: "non-resource path",
			attrs:   authorization.Attributes{User: alice, Verb: "get", Path: "/foo"},
			message: `forbidden: User "alice" cannot get path "/foo"`,
			details: &metav1.StatusDetails{}},
		{name: "the authorizer's reason is appended",
			attrs:   authorization.Attributes{User: alice, Verb: "delete", ResourceRequest: true, Resource: "secrets", Name: "s", Namespace: "kube-system"},
			reason:  "RBAC: role.rbac.authorization.k8s.io \"x\" not found",
			message: `secrets "s" is forbidden: User "alice" cannot delete resource "secrets" in API group "" in the namespace "kube-system": RBAC: role.rbac.authorization.k8s.io "x" not found`,
			details: &metav1.StatusDetails{Name: "s", Kind: "secrets"}},
		{name: "impersonation of a user",
			attrs:   authorization.Attributes{User: alice, Verb: "impersonate", ResourceRequest: true, APIGroup: "authentication.k8s.io", Resource: "users", Name: "bob"},
			message: `users.authentication.k8s.io "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "authentication.k8s.io" at the cluster scope`,
			details: &metav1.StatusDetails{Name: "bob", Group: "authentication.k8s.io", Kind: "users"}},
		{name: "invalid UTF-8 in the path is quoted",
			attrs:   authorization.Attributes{User: alice, Verb: "get", Path: "/\xff"},
			message: `forbidden: User "alice" cannot get path "/\xff"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := forbidden(tc.attrs, tc.reason).ErrStatus
			if st.Code != 403 || st.Reason != metav1.StatusReasonForbidden || st.Message != tc.message {
				t.Fatalf("got %d %s %q\nwant message %q", st.Code, st.Reason, st.Message, tc.message)
			}
			if tc.details != nil {
				if diff := cmp.Diff(tc.details, st.Details); diff != "" {
					t.Errorf("details (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestRequestAttributes(t *testing.T) {
	for _, tc := range []struct {
		method, target string
		want           authorization.Attributes
	}{
		{"GET", "/api/v1/namespaces/default/pods", authorization.Attributes{Verb: "list", ResourceRequest: true, APIVersion: "v1", Resource: "pods", Namespace: "default"}},
		{"GET", "/api/v1/namespaces/default/pods/web", authorization.Attributes{Verb: "get", ResourceRequest: true, APIVersion: "v1", Resource: "pods", Namespace: "default", Name: "web"}},
		{"HEAD", "/api/v1/namespaces/default/pods/web", authorization.Attributes{Verb: "get", ResourceRequest: true, APIVersion: "v1", Resource: "pods", Namespace: "default", Name: "web"}},
		{"GET", "/api/v1/namespaces/default/pods?watch=true", authorization.Attributes{Verb: "watch", ResourceRequest: true, APIVersion: "v1", Resource: "pods", Namespace: "default"}},
		{"GET", "/api/v1/namespaces/default/pods?watch=1&fieldSelector=metadata.name%3Dweb", authorization.Attributes{Verb: "watch", ResourceRequest: true, APIVersion: "v1", Resource: "pods", Namespace: "default", Name: "web"}},
		{"GET", "/api/v1/pods?watch=false", authorization.Attributes{Verb: "list", ResourceRequest: true, APIVersion: "v1", Resource: "pods"}},
		{"GET", "/api/v1/watch/namespaces/ns/pods/web", authorization.Attributes{Verb: "watch", ResourceRequest: true, APIVersion: "v1", Resource: "pods", Namespace: "ns", Name: "web"}},
		{"GET", "/api/v1/watch/pods", authorization.Attributes{Verb: "watch", ResourceRequest: true, APIVersion: "v1", Resource: "pods"}},
		{"POST", "/apis/apps/v1/namespaces/ns/deployments", authorization.Attributes{Verb: "create", ResourceRequest: true, APIGroup: "apps", APIVersion: "v1", Resource: "deployments", Namespace: "ns"}},
		{"PUT", "/apis/apps/v1/namespaces/ns/deployments/d/scale", authorization.Attributes{Verb: "update", ResourceRequest: true, APIGroup: "apps", APIVersion: "v1", Resource: "deployments", Subresource: "scale", Namespace: "ns", Name: "d"}},
		{"PATCH", "/apis/apps/v1/namespaces/ns/deployments/d/status", authorization.Attributes{Verb: "patch", ResourceRequest: true, APIGroup: "apps", APIVersion: "v1", Resource: "deployments", Subresource: "status", Namespace: "ns", Name: "d"}},
		{"DELETE", "/api/v1/namespaces/ns/pods/web", authorization.Attributes{Verb: "delete", ResourceRequest: true, APIVersion: "v1", Resource: "pods", Namespace: "ns", Name: "web"}},
		{"DELETE", "/api/v1/namespaces/ns/pods", authorization.Attributes{Verb: "deletecollection", ResourceRequest: true, APIVersion: "v1", Resource: "pods", Namespace: "ns"}},
		{"POST", "/api/v1/namespaces/ns/serviceaccounts/sa/token", authorization.Attributes{Verb: "create", ResourceRequest: true, APIVersion: "v1", Resource: "serviceaccounts", Subresource: "token", Namespace: "ns", Name: "sa"}},
		{"GET", "/api/v1/namespaces/ns", authorization.Attributes{Verb: "get", ResourceRequest: true, APIVersion: "v1", Resource: "namespaces", Namespace: "ns", Name: "ns"}},
		{"PUT", "/api/v1/namespaces/ns/finalize", authorization.Attributes{Verb: "update", ResourceRequest: true, APIVersion: "v1", Resource: "namespaces", Subresource: "finalize", Namespace: "ns", Name: "ns"}},
		{"GET", "/api/v1/namespaces", authorization.Attributes{Verb: "list", ResourceRequest: true, APIVersion: "v1", Resource: "namespaces"}},
		{"GET", "/api/v1/nodes/n1", authorization.Attributes{Verb: "get", ResourceRequest: true, APIVersion: "v1", Resource: "nodes", Name: "n1"}},
		{"GET", "/api/v1/proxy/namespaces/ns/pods/web/a/b", authorization.Attributes{Verb: "proxy", ResourceRequest: true, APIVersion: "v1", Resource: "pods", Namespace: "ns", Name: "web"}},
		{"POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", authorization.Attributes{Verb: "create", ResourceRequest: true, APIGroup: "authorization.k8s.io", APIVersion: "v1", Resource: "selfsubjectaccessreviews"}},
		{"GET", "/api", authorization.Attributes{Verb: "get", Path: "/api"}},
		{"GET", "/api/v1", authorization.Attributes{Verb: "get", Path: "/api/v1"}},
		{"GET", "/apis/apps/v1", authorization.Attributes{Verb: "get", Path: "/apis/apps/v1"}},
		{"GET", "/apis/apps", authorization.Attributes{Verb: "get", Path: "/apis/apps"}},
		{"GET", "/healthz/ping", authorization.Attributes{Verb: "get", Path: "/healthz/ping"}},
		{"POST", "/foo/bar", authorization.Attributes{Verb: "post", Path: "/foo/bar"}},
		{"GET", "/", authorization.Attributes{Verb: "get", Path: "/"}},
		{"OPTIONS", "/api/v1/pods", authorization.Attributes{ResourceRequest: true, APIVersion: "v1", Resource: "pods"}},
	} {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			got := requestAttributes(httptest.NewRequest(tc.method, tc.target, nil), nil)
			tc.want.Path = got.Path // the path is always recorded
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("attributes (-want +got):\n%s", diff)
			}
		})
	}
}

// denyAllBut is an authorizer allowing only what allow accepts and
// recording what it was asked.
func denyAllBut(allow func(a authorization.Attributes) bool, asked *[]authorization.Attributes) authorization.Authorizer {
	return authorization.AuthorizerFunc(func(_ context.Context, a authorization.Attributes) (authorization.Decision, string, error) {
		if asked != nil {
			c := a
			c.User = nil
			*asked = append(*asked, c)
		}
		if allow(a) {
			return authorization.DecisionAllow, "", nil
		}
		return authorization.DecisionNoOpinion, "no rule says so", nil
	})
}

func TestAuthorization(t *testing.T) {
	e := newAuthEnv(t, func(cfg *Config, x authentication.Authenticator) {
		cfg.Authenticator = x
		cfg.Authorizer = authorization.AuthorizerFunc(func(_ context.Context, a authorization.Attributes) (authorization.Decision, string, error) {
			switch {
			case a.User.Name == "admin":
				return authorization.DecisionAllow, "", nil
			case a.User.Name == "broken":
				return authorization.DecisionNoOpinion, "", errors.New("authorizer down")
			case a.User.Name == "reader" && a.Verb == "get" && a.Resource == "pods":
				return authorization.DecisionAllow, "", nil
			case !a.ResourceRequest && a.Path == "/healthz":
				return authorization.DecisionAllow, "", nil
			}
			return authorization.DecisionDeny, "denied by test", nil
		})
	})
	admin, reader := e.client(e.user("admin")), e.client(e.user("reader"))
	e.do(admin, "POST", podPath("default", ""), testPod("web", nil)).expect(t, 201, "")
	e.do(reader, "GET", podPath("default", "web"), nil).expect(t, 200, "")
	for _, tc := range []struct {
		name, method, path string
		client             *http.Client
		message            string
	}{
		{"list is not get", "GET", podPath("default", ""), reader,
			`pods is forbidden: User "reader" cannot list resource "pods" in API group "" in the namespace "default": denied by test`},
		{"delete is refused and the object stays", "DELETE", podPath("default", "web"), reader,
			`pods "web" is forbidden: User "reader" cannot delete resource "pods" in API group "" in the namespace "default": denied by test`},
		{"a path the server does not serve is still authorized first", "GET", "/apis/nothing.example/v1/things", reader,
			`things.nothing.example is forbidden: User "reader" cannot list resource "things" in API group "nothing.example" at the cluster scope: denied by test`},
		{"non-resource path", "GET", "/version", reader,
			`forbidden: User "reader" cannot get path "/version": denied by test`},
		{"metrics are authorized", "GET", "/metrics", reader,
			`forbidden: User "reader" cannot get path "/metrics": denied by test`},
		{"anonymous is authorized too", "GET", "/version", e.client(),
			`forbidden: User "system:anonymous" cannot get path "/version": denied by test`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.client, tc.method, tc.path, nil)
			r.expect(t, 403, metav1.StatusReasonForbidden)
			if msg := r.status(t).Message; msg != tc.message {
				t.Errorf("message %q\nwant    %q", msg, tc.message)
			}
		})
	}
	e.do(reader, "GET", podPath("default", "web"), nil).expect(t, 200, "")
	e.do(e.client(), "GET", "/healthz", nil).expect(t, 200, "")
	t.Run("an authorizer error without a decision is a 500", func(t *testing.T) {
		e.do(e.client(e.user("broken")), "GET", podPath("default", "web"), nil).expect(t, 500, metav1.StatusReasonInternalError)
	})
}

func FuzzRequestAttributes(f *testing.F) {
	for _, p := range []string{"/api/v1/namespaces/a/pods/b/log", "/apis/g/v/watch", "/api/v1/watch", "/api/v1/proxy", "//api//v1", "/apis/a/b/c/d/e/f/g"} {
		f.Add("GET", p, "watch=1&fieldSelector=metadata.name%3Dx")
	}
	f.Fuzz(func(t *testing.T, method, p, query string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.Method, r.URL.Path, r.URL.RawQuery = method, p, query
		a := requestAttributes(r, nil)
		if a.ResourceRequest {
			parts := splitPath(p)
			if len(parts) < 3 || (parts[0] != "api" && parts[0] != "apis") {
				t.Fatalf("%q is no resource path but was taken for one: %+v", p, a)
			}
		} else if a.Resource != "" || a.Namespace != "" || a.Name != "" {
			t.Fatalf("non-resource request with resource fields: %+v", a)
		}
	})
}
