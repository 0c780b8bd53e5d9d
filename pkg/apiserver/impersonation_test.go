package apiserver

import (
	"net/http"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/authentication"
	"github.com/kplane/kplane/pkg/authorization"
)

func TestImpersonation(t *testing.T) {
	var asked []authorization.Attributes
	e := newAuthEnv(t, func(cfg *Config, x authentication.Authenticator) {
		cfg.Authenticator = x
		cfg.Authorizer = denyAllBut(func(a authorization.Attributes) bool {
			switch a.User.Name {
			case "admin":
				return true
			case "limited":
				// May impersonate bob and the group dev, nothing else.
				return a.Verb != "impersonate" || (a.Resource == "users" && a.Name == "bob") || (a.Resource == "groups" && a.Name == "dev")
			}
			return a.Verb != "impersonate"
		}, &asked)
	})
	admin, limited := e.client(e.user("admin")), e.client(e.user("limited"))
	for _, tc := range []struct {
		name    string
		client  *http.Client
		headers []string
		want    authenticationv1.UserInfo
		// asked are the impersonation checks made, in order.
		asked []authorization.Attributes
	}{
		{name: "user alone gets system:authenticated",
			client: admin, headers: []string{"Impersonate-User", "bob"},
			want:  authenticationv1.UserInfo{Username: "bob", Groups: []string{"system:authenticated"}},
			asked: []authorization.Attributes{{Verb: "impersonate", ResourceRequest: true, APIGroup: "authentication.k8s.io", Resource: "users", Name: "bob"}}},
		{name: "user with groups gets those groups and system:authenticated, as kube-apiserver",
			client: admin, headers: []string{"Impersonate-User", "bob", "Impersonate-Group", "dev", "Impersonate-Group", "ops"},
			want: authenticationv1.UserInfo{Username: "bob", Groups: []string{"dev", "ops", "system:authenticated"}},
			asked: []authorization.Attributes{
				{Verb: "impersonate", ResourceRequest: true, APIGroup: "authentication.k8s.io", Resource: "users", Name: "bob"},
				{Verb: "impersonate", ResourceRequest: true, APIGroup: "authentication.k8s.io", Resource: "groups", Name: "dev"},
				{Verb: "impersonate", ResourceRequest: true, APIGroup: "authentication.k8s.io", Resource: "groups", Name: "ops"},
			}},
		{name: "uid and extras are each authorized",
			client: admin, headers: []string{"Impersonate-User", "bob", "Impersonate-Uid", "u-1", "Impersonate-Extra-Scopes", "view", "Impersonate-Extra-Scopes", "edit", "Impersonate-Extra-Example.com%2fteam", "a"},
			want: authenticationv1.UserInfo{Username: "bob", UID: "u-1", Groups: []string{"system:authenticated"},
				Extra: map[string]authenticationv1.ExtraValue{"scopes": {"view", "edit"}, "example.com/team": {"a"}}},
			asked: []authorization.Attributes{
				{Verb: "impersonate", ResourceRequest: true, APIGroup: "authentication.k8s.io", Resource: "users", Name: "bob"},
				{Verb: "impersonate", ResourceRequest: true, APIGroup: "authentication.k8s.io", Resource: "userextras", Subresource: "example.com/team", Name: "a"},
				{Verb: "impersonate", ResourceRequest: true, APIGroup: "authentication.k8s.io", Resource: "userextras", Subresource: "scopes", Name: "view"},
				{Verb: "impersonate", ResourceRequest: true, APIGroup: "authentication.k8s.io", Resource: "userextras", Subresource: "scopes", Name: "edit"},
				{Verb: "impersonate", ResourceRequest: true, APIGroup: "authentication.k8s.io", Resource: "uids", Name: "u-1"},
			}},
		{name: "ServiceAccount user is authorized on serviceaccounts and gets its groups",
			client: admin, headers: []string{"Impersonate-User", "system:serviceaccount:ns1:builder"},
			want: authenticationv1.UserInfo{Username: "system:serviceaccount:ns1:builder",
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated"}},
			asked: []authorization.Attributes{{Verb: "impersonate", ResourceRequest: true, Resource: "serviceaccounts", Namespace: "ns1", Name: "builder"}}},
		{name: "anonymous user is made unauthenticated, as kube-apiserver",
			client: admin, headers: []string{"Impersonate-User", "system:anonymous"},
			want: authenticationv1.UserInfo{Username: "system:anonymous", Groups: []string{"system:unauthenticated"}}},
		{name: "allowed for a limited requester within its rights",
			client: limited, headers: []string{"Impersonate-User", "bob", "Impersonate-Group", "dev"},
			want: authenticationv1.UserInfo{Username: "bob", Groups: []string{"dev", "system:authenticated"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked = nil
			got := e.whoami(tc.client, tc.headers...)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("user (-want +got):\n%s", diff)
			}
			imp := slices.DeleteFunc(slices.Clone(asked), func(a authorization.Attributes) bool { return a.Verb != "impersonate" })
			if tc.asked != nil {
				if diff := cmp.Diff(tc.asked, imp); diff != "" {
					t.Errorf("impersonation checks (-want +got):\n%s", diff)
				}
			}
			// The request itself is authorized as the impersonated user.
			if last := asked[len(asked)-1]; last.Verb != "create" || last.Resource != "selfsubjectreviews" {
				t.Errorf("last check %+v, want the request itself", last)
			}
		})
	}
	for _, tc := range []struct {
		name    string
		client  *http.Client
		headers []string
		code    int
		message string
	}{
		{"impersonating a user without the right", limited, []string{"Impersonate-User", "root"}, 403,
			`users.authentication.k8s.io "root" is forbidden: User "limited" cannot impersonate resource "users" in API group "authentication.k8s.io" at the cluster scope: no rule says so`},
		{"impersonating a group without the right", limited, []string{"Impersonate-User", "bob", "Impersonate-Group", "system:masters"}, 403,
			`groups.authentication.k8s.io "system:masters" is forbidden: User "limited" cannot impersonate resource "groups" in API group "authentication.k8s.io" at the cluster scope: no rule says so`},
		{"impersonating a ServiceAccount without the right", limited, []string{"Impersonate-User", "system:serviceaccount:kube-system:default"}, 403,
			`serviceaccounts "default" is forbidden: User "limited" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "kube-system": no rule says so`},
		{"impersonating a uid without the right", limited, []string{"Impersonate-User", "bob", "Impersonate-Uid", "1"}, 403,
			`uids.authentication.k8s.io "1" is forbidden: User "limited" cannot impersonate resource "uids" in API group "authentication.k8s.io" at the cluster scope: no rule says so`},
		{"impersonating an extra without the right", limited, []string{"Impersonate-User", "bob", "Impersonate-Extra-Scopes", "all"}, 403,
			`userextras.authentication.k8s.io "all" is forbidden: User "limited" cannot impersonate resource "userextras/scopes" in API group "authentication.k8s.io" at the cluster scope: no rule says so`},
		{"groups without a user", admin, []string{"Impersonate-Group", "system:masters"}, 400, ""},
		{"uid without a user", admin, []string{"Impersonate-Uid", "x"}, 400, ""},
		{"extra without a user", admin, []string{"Impersonate-Extra-Scopes", "x"}, 400, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.client, "POST", whoamiPath, whoamiBody, tc.headers...)
			if r.code != tc.code {
				t.Fatalf("got %d, want %d: %s", r.code, tc.code, r.body)
			}
			st := r.status(t)
			if tc.code == 403 && (st.Reason != metav1.StatusReasonForbidden || st.Message != tc.message) {
				t.Errorf("got %s %q\nwant message %q", st.Reason, st.Message, tc.message)
			}
			if tc.code == 400 && st.Reason != metav1.StatusReasonBadRequest {
				t.Errorf("reason %s, want BadRequest", st.Reason)
			}
		})
	}
}
