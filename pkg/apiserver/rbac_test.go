package apiserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"

	"github.com/kplane/kplane/pkg/authentication"
	"github.com/kplane/kplane/pkg/authorization"
	"github.com/kplane/kplane/pkg/authorization/rbac/bootstrap"
	"github.com/kplane/kplane/pkg/storage"
	"github.com/kplane/kplane/pkg/storage/memory"
)

// The headers the test authenticator reads: the user's name and its
// comma-separated groups. Requests without them carry no user.
const (
	testUserHeader   = "X-Test-User"
	testGroupsHeader = "X-Test-Groups"
)

// withTestUser puts the user the test headers name on the request
// context, as the authentication filter will.
// testAdmin is the user of requests without the test user header.
var testAdmin = &authentication.User{Name: "test-admin", Groups: []string{authentication.SystemPrivilegedGroup, authentication.AllAuthenticated}}

func withTestUser(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if name := r.Header.Get(testUserHeader); name != "" {
			u := &authentication.User{Name: name}
			if g := r.Header.Get(testGroupsHeader); g != "" {
				u.Groups = strings.Split(g, ",")
			}
			r = r.WithContext(authentication.WithUser(r.Context(), u))
		} else {
			r = r.WithContext(authentication.WithUser(r.Context(), testAdmin))
		}
		h.ServeHTTP(w, r)
	})
}

// newRBACEnv is a server in RBAC mode over backend (a new memory backend
// when nil), its controllers running, served through withTestUser.
func newRBACEnv(t *testing.T, backend storage.Backend) *testEnv {
	t.Helper()
	clk := testclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	if backend == nil {
		b, err := memory.New(memory.Config{Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		backend = b
	}
	s, err := New(Config{Backend: backend, Clock: clk, AuthorizationMode: AuthorizationModeRBAC, Admission: noServiceAccounts})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = s.RunControllers(ctx) })
	hs := httptest.NewServer(withTestUser(s.Handler()))
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		cancel()
		wg.Wait()
	})
	if err := s.rbac.cache.waitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	e := &testEnv{t: t, clock: clk, server: s, http: hs}
	for _, ns := range []string{"team", "other"} {
		e.do("POST", "/api/v1/namespaces", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}).expect(t, 201, "")
	}
	return e
}

// as returns the headers that make a request come from user in groups.
func as(user string, groups ...string) []string {
	return []string{testUserHeader, user, testGroupsHeader, strings.Join(groups, ",")}
}

var admin = as("root", authentication.SystemPrivilegedGroup, authentication.AllAuthenticated)

// waitPolicy waits until cond holds over the server's policy cache.
func (e *testEnv) waitPolicy(cond func(c *rbacCache) bool) {
	e.t.Helper()
	c := e.server.rbac.cache
	deadline := time.After(10 * time.Second)
	for {
		ch := c.changes()
		if cond(c) {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			e.t.Fatal("the policy cache never got the expected state")
		}
	}
}

func (e *testEnv) waitRoleBinding(ns, name string) {
	e.t.Helper()
	e.waitPolicy(func(c *rbacCache) bool {
		for _, b := range c.RoleBindings(ns) {
			if b.Name == name {
				return true
			}
		}
		return false
	})
}

// waitRoleOf waits until the role a binding refers to, when it exists, is
// in the policy cache.
func (e *testEnv) waitRoleOf(ns, roleKind, role string) {
	e.t.Helper()
	path := "/apis/rbac.authorization.k8s.io/v1/clusterroles/" + role
	if roleKind == "Role" {
		path = "/apis/rbac.authorization.k8s.io/v1/namespaces/" + ns + "/roles/" + role
	}
	if e.do("GET", path, nil, admin...).code != 200 {
		return
	}
	e.waitPolicy(func(c *rbacCache) bool {
		if roleKind == "Role" {
			_, ok := c.Role(ns, role)
			return ok
		}
		_, ok := c.ClusterRole(role)
		return ok
	})
}

func (e *testEnv) waitClusterRoleBinding(name string) {
	e.t.Helper()
	e.waitPolicy(func(c *rbacCache) bool {
		for _, b := range c.ClusterRoleBindings() {
			if b.Name == name {
				return true
			}
		}
		return false
	})
}

func TestUnknownAuthorizationMode(t *testing.T) {
	backend, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Close()
	if _, err := New(Config{Backend: backend, AuthorizationMode: "Webhook"}); err == nil {
		t.Fatal("New accepted an unknown AuthorizationMode")
	}
}

func TestAlwaysAllowHasNoAuthorizer(t *testing.T) {
	e := newTestEnv(t)
	if e.server.Authorizer() != nil {
		t.Fatal("AlwaysAllow mode has an authorizer")
	}
	// No bootstrap policy either.
	var list rbacv1.ClusterRoleList
	e.do("GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles", nil).decode(t, &list)
	if len(list.Items) != 0 {
		t.Fatalf("AlwaysAllow mode stored %d ClusterRoles", len(list.Items))
	}
}

func TestBootstrapPolicyInstalled(t *testing.T) {
	e := newRBACEnv(t, nil)
	var role rbacv1.ClusterRole
	e.do("GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/cluster-admin", nil).decode(t, &role)
	if diff := cmp.Diff(bootstrap.ClusterRoles()[0].Rules, role.Rules); diff != "" {
		t.Errorf("cluster-admin rules (-want +got):\n%s", diff)
	}
	var b rbacv1.ClusterRoleBinding
	e.do("GET", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/system:node", nil).decode(t, &b)
	if len(b.Subjects) != 1 || b.Subjects[0].Name != authentication.NodesGroup {
		t.Errorf("system:node subjects %+v", b.Subjects)
	}
	b = rbacv1.ClusterRoleBinding{}
	e.do("GET", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/system:controller:deployment-controller", nil).decode(t, &b)
	if len(b.Subjects) != 1 || b.Subjects[0] != (rbacv1.Subject{Kind: "ServiceAccount", Namespace: "kube-system", Name: "deployment-controller"}) {
		t.Errorf("deployment-controller subjects %+v", b.Subjects)
	}
}

func TestBootstrapReconciliation(t *testing.T) {
	clk := testclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	backend, err := memory.New(memory.Config{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Close()
	newServer := func() *Server {
		s, err := New(Config{Backend: backend, Clock: clk, AuthorizationMode: AuthorizationModeRBAC, Admission: noServiceAccounts})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	get := func(s *Server, resource, name string, into any) response {
		e := &testEnv{t: t, server: s, http: httptest.NewServer(withTestUser(s.Handler()))}
		defer e.http.Close()
		r := e.do("GET", "/apis/rbac.authorization.k8s.io/v1/"+resource+"/"+name, nil)
		r.decode(t, into)
		return r
	}
	put := func(s *Server, resource, name string, obj any) {
		e := &testEnv{t: t, server: s, http: httptest.NewServer(withTestUser(s.Handler()))}
		defer e.http.Close()
		e.do("PUT", "/apis/rbac.authorization.k8s.io/v1/"+resource+"/"+name, obj).expect(t, 200, "")
	}
	s := newServer()
	var view rbacv1.ClusterRole
	get(s, "clusterroles", "system:aggregate-to-view", &view)
	rv := view.ResourceVersion

	// Starting again changes nothing.
	s = newServer()
	get(s, "clusterroles", "system:aggregate-to-view", &view)
	if view.ResourceVersion != rv {
		t.Fatalf("a second start rewrote an unchanged role (rv %s -> %s)", rv, view.ResourceVersion)
	}

	// A user removes a rule and adds one; a label is dropped.
	userRule := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"example.com"}, Resources: []string{"widgets"}}
	view.Rules = append(view.Rules[1:], userRule)
	put(s, "clusterroles", view.Name, &view)
	var b rbacv1.ClusterRoleBinding
	get(s, "clusterrolebindings", "system:discovery", &b)
	b.Subjects = []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: "extra"}}
	put(s, "clusterrolebindings", b.Name, &b)
	// A protected role is left as the user made it.
	var basic rbacv1.ClusterRole
	get(s, "clusterroles", "system:basic-user", &basic)
	basic.Annotations[bootstrap.AutoUpdateAnnotation] = "false"
	basic.Rules = nil
	put(s, "clusterroles", basic.Name, &basic)

	s = newServer()
	get(s, "clusterroles", "system:aggregate-to-view", &view)
	want := bootstrap.ClusterRoles()
	var expected rbacv1.ClusterRole
	for _, r := range want {
		if r.Name == view.Name {
			expected = r
		}
	}
	if !coversRules(view.Rules, expected.Rules) {
		t.Errorf("the removed rule was not restored: %v", view.Rules)
	}
	if !coversRules(view.Rules, []rbacv1.PolicyRule{userRule}) {
		t.Errorf("the user's rule was removed: %v", view.Rules)
	}
	get(s, "clusterrolebindings", "system:discovery", &b)
	if len(b.Subjects) != 2 || b.Subjects[0].Name != "extra" || b.Subjects[1].Name != authentication.AllAuthenticated {
		t.Errorf("subjects %+v, want the user's and the bootstrap one", b.Subjects)
	}
	get(s, "clusterroles", "system:basic-user", &basic)
	if len(basic.Rules) != 0 {
		t.Errorf("a role annotated autoupdate=false was reconciled: %v", basic.Rules)
	}
	rv = view.ResourceVersion
	s = newServer()
	get(s, "clusterroles", "system:aggregate-to-view", &view)
	if view.ResourceVersion != rv {
		t.Error("reconciliation is not idempotent")
	}
}

func coversRules(have, want []rbacv1.PolicyRule) bool {
	for _, w := range want {
		for _, res := range w.Resources {
			for _, verb := range w.Verbs {
				ok := false
				for _, h := range have {
					if contains(h.Resources, res) && contains(h.Verbs, verb) && contains(h.APIGroups, w.APIGroups[0]) {
						ok = true
					}
				}
				if !ok {
					return false
				}
			}
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

const (
	ssarPath = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
	ssrrPath = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"
	sarPath  = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
)

func lsarPath(ns string) string {
	return "/apis/authorization.k8s.io/v1/namespaces/" + ns + "/localsubjectaccessreviews"
}

func (e *testEnv) createBinding(ns, name, roleKind, role string, subjects ...rbacv1.Subject) {
	e.t.Helper()
	// The roles and the bindings reach the policy cache by separate
	// watches: a role created just before must be in it too.
	defer e.waitRoleOf(ns, roleKind, role)
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: roleKind, Name: role}
	if ns == "" {
		e.do("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
			&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: ref, Subjects: subjects}, admin...).expect(e.t, 201, "")
		e.waitClusterRoleBinding(name)
		return
	}
	e.do("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/"+ns+"/rolebindings",
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: ref, Subjects: subjects}, admin...).expect(e.t, 201, "")
	e.waitRoleBinding(ns, name)
}

func userSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: "User", APIGroup: rbacv1.GroupName, Name: name}
}

func TestAccessReviewsRBAC(t *testing.T) {
	e := newRBACEnv(t, nil)
	alice := as("alice", "devs", authentication.AllAuthenticated)
	podsInTeam := &authorizationv1.ResourceAttributes{Namespace: "team", Verb: "list", Resource: "pods"}
	ssar := func(attrs *authorizationv1.ResourceAttributes, nonRes *authorizationv1.NonResourceAttributes, headers ...string) authorizationv1.SubjectAccessReviewStatus {
		t.Helper()
		r := e.do("POST", ssarPath, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs, NonResourceAttributes: nonRes}}, headers...)
		r.expect(t, 201, "")
		var got authorizationv1.SelfSubjectAccessReview
		r.decode(t, &got)
		return got.Status
	}
	t.Run("self access review without a binding", func(t *testing.T) {
		if st := ssar(podsInTeam, nil, alice...); st.Allowed || st.Denied {
			t.Fatalf("status %+v, want neither allowed nor denied", st)
		}
	})
	t.Run("self access review of bootstrap discovery", func(t *testing.T) {
		st := ssar(nil, &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/apis"}, alice...)
		if !st.Allowed || st.Reason != `RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole "system:discovery" to Group "system:authenticated"` {
			t.Fatalf("status %+v", st)
		}
	})
	e.createBinding("team", "alice-view", "ClusterRole", "system:aggregate-to-view", userSubject("alice"))
	t.Run("self access review with a rolebinding", func(t *testing.T) {
		st := ssar(podsInTeam, nil, alice...)
		if !st.Allowed || st.Reason != `RBAC: allowed by RoleBinding "alice-view/team" of ClusterRole "system:aggregate-to-view" to User "alice"` {
			t.Fatalf("status %+v", st)
		}
		if st := ssar(&authorizationv1.ResourceAttributes{Namespace: "other", Verb: "list", Resource: "pods"}, nil, alice...); st.Allowed {
			t.Fatal("the rolebinding allowed another namespace")
		}
		if st := ssar(&authorizationv1.ResourceAttributes{Namespace: "team", Verb: "delete", Resource: "pods"}, nil, alice...); st.Allowed {
			t.Fatal("a view role allowed delete")
		}
	})
	t.Run("self access review as system:masters", func(t *testing.T) {
		if st := ssar(&authorizationv1.ResourceAttributes{Verb: "escalate", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}, nil, admin...); !st.Allowed {
			t.Fatalf("status %+v", st)
		}
	})
	t.Run("self rules review", func(t *testing.T) {
		r := e.do("POST", ssrrPath, &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "team"}}, alice...)
		r.expect(t, 201, "")
		var got authorizationv1.SelfSubjectRulesReview
		r.decode(t, &got)
		if got.Status.Incomplete || got.Status.EvaluationError != "" {
			t.Fatalf("status %+v", got.Status)
		}
		var res []string
		for _, rule := range got.Status.ResourceRules {
			res = append(res, rule.Resources...)
		}
		if !contains(res, "pods") || !contains(res, "selfsubjectaccessreviews") {
			t.Errorf("resource rules %v lack the view role's or basic-user's", got.Status.ResourceRules)
		}
		if len(got.Status.NonResourceRules) == 0 {
			t.Error("no non-resource rules (system:discovery)")
		}
	})
	e.createBinding("team", "dangling", "Role", "missing", userSubject("alice"))
	t.Run("self rules review with a missing role", func(t *testing.T) {
		r := e.do("POST", ssrrPath, &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "team"}}, alice...)
		var got authorizationv1.SelfSubjectRulesReview
		r.decode(t, &got)
		if !got.Status.Incomplete || got.Status.EvaluationError != `role.rbac.authorization.k8s.io "missing" not found` {
			t.Fatalf("status %+v", got.Status)
		}
		if st := ssar(&authorizationv1.ResourceAttributes{Namespace: "team", Verb: "delete", Resource: "pods"}, nil, alice...); st.Reason != `RBAC: role.rbac.authorization.k8s.io "missing" not found` {
			t.Fatalf("denied reason %q", st.Reason)
		}
	})
	t.Run("subject access review", func(t *testing.T) {
		cases := []struct {
			name  string
			spec  authorizationv1.SubjectAccessReviewSpec
			allow bool
		}{
			{"user bound in namespace", authorizationv1.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: podsInTeam}, true},
			{"other user", authorizationv1.SubjectAccessReviewSpec{User: "bob", ResourceAttributes: podsInTeam}, false},
			{"group only", authorizationv1.SubjectAccessReviewSpec{Groups: []string{authentication.SystemPrivilegedGroup}, ResourceAttributes: podsInTeam}, true},
			{"service account of a controller", authorizationv1.SubjectAccessReviewSpec{User: "system:serviceaccount:kube-system:job-controller",
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "x", Verb: "update", Group: "batch", Resource: "jobs", Subresource: "status"}}, true},
			{"non-resource", authorizationv1.SubjectAccessReviewSpec{User: "x", Groups: []string{authentication.AllUnauthenticated},
				NonResourceAttributes: &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/version"}}, true},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := e.do("POST", sarPath, &authorizationv1.SubjectAccessReview{Spec: c.spec}, admin...)
				r.expect(t, 201, "")
				var got authorizationv1.SubjectAccessReview
				r.decode(t, &got)
				if got.Status.Allowed != c.allow || got.Kind != "SubjectAccessReview" {
					t.Fatalf("got %+v, want allowed=%v", got, c.allow)
				}
			})
		}
		r := e.do("POST", sarPath, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: podsInTeam}}, admin...)
		r.expect(t, 422, metav1.StatusReasonInvalid)
		if st := r.status(t); st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != "spec.user" {
			t.Errorf("status %+v", st)
		}
	})
	t.Run("local subject access review", func(t *testing.T) {
		r := e.do("POST", lsarPath("team"), &authorizationv1.LocalSubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: podsInTeam}}, admin...)
		r.expect(t, 201, "")
		var got authorizationv1.LocalSubjectAccessReview
		r.decode(t, &got)
		if !got.Status.Allowed || got.Namespace != "team" || got.Kind != "LocalSubjectAccessReview" {
			t.Fatalf("got %+v", got)
		}
		// spec.resourceAttributes.namespace must be the path's.
		r = e.do("POST", lsarPath("other"), &authorizationv1.LocalSubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: podsInTeam}}, admin...)
		r.expect(t, 422, metav1.StatusReasonInvalid)
		if st := r.status(t); st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != "spec.resourceAttributes.namespace" {
			t.Errorf("status %+v", st)
		}
		// metadata.namespace too.
		r = e.do("POST", lsarPath("team"), &authorizationv1.LocalSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: "other"},
			Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: podsInTeam}}, admin...)
		r.expect(t, 400, metav1.StatusReasonBadRequest)
		r = e.do("POST", lsarPath("team"), &authorizationv1.LocalSubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice",
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/x"}}}, admin...)
		r.expect(t, 422, metav1.StatusReasonInvalid)
		// It is namespaced only; the cluster path is not served.
		e.do("POST", "/apis/authorization.k8s.io/v1/localsubjectaccessreviews", &authorizationv1.LocalSubjectAccessReview{}, admin...).expect(t, 404, metav1.StatusReasonNotFound)
		e.do("POST", "/apis/authorization.k8s.io/v1/namespaces/team/subjectaccessreviews", &authorizationv1.SubjectAccessReview{}, admin...).expect(t, 404, metav1.StatusReasonNotFound)
	})
}

func TestAccessReviewsAlwaysAllow(t *testing.T) {
	e := newTestEnv(t)
	for _, c := range []struct {
		path string
		obj  any
	}{
		{sarPath, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get"}}}},
		{lsarPath("default"), &authorizationv1.LocalSubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "default", Verb: "get"}}}},
	} {
		r := e.do("POST", c.path, c.obj)
		r.expect(t, 201, "")
		var got authorizationv1.SubjectAccessReview
		r.decode(t, &got)
		if !got.Status.Allowed || got.Status.Reason != allowReason {
			t.Errorf("%s: %+v", c.path, got.Status)
		}
	}
}

func TestEscalationPrevention(t *testing.T) {
	e := newRBACEnv(t, nil)
	const rbacAPI = "/apis/rbac.authorization.k8s.io/v1"
	// bob may manage roles and bindings in team (the aggregate-to-admin
	// part of admin) and read pods; nothing else.
	e.createBinding("team", "bob-admin", "ClusterRole", "system:aggregate-to-admin", userSubject("bob"))
	e.do("POST", rbacAPI+"/clusterroles", &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}}}, admin...).expect(t, 201, "")
	e.do("POST", rbacAPI+"/clusterroles", &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "secret-reader"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}}}}, admin...).expect(t, 201, "")
	e.createBinding("team", "bob-pods", "ClusterRole", "pod-reader", userSubject("bob"))
	bob := as("bob", "devs")
	secretRole := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "secrets"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}}}}
	heldRole := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pods"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}}}

	t.Run("role granting what the user lacks is forbidden", func(t *testing.T) {
		r := e.do("POST", rbacAPI+"/namespaces/team/roles", secretRole, bob...)
		r.expect(t, 403, metav1.StatusReasonForbidden)
		want := "roles.rbac.authorization.k8s.io \"secrets\" is forbidden: user \"bob\" (groups=[\"devs\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}"
		if st := r.status(t); st.Message != want {
			t.Fatalf("message\n%s\nwant\n%s", st.Message, want)
		}
		e.do("GET", rbacAPI+"/namespaces/team/roles/secrets", nil, admin...).expect(t, 404, metav1.StatusReasonNotFound)
	})
	t.Run("role granting what the user holds is created", func(t *testing.T) {
		e.do("POST", rbacAPI+"/namespaces/team/roles", heldRole, bob...).expect(t, 201, "")
	})
	t.Run("role held only in another namespace is forbidden", func(t *testing.T) {
		e.do("POST", rbacAPI+"/namespaces/other/roles", heldRole, bob...).expect(t, 403, metav1.StatusReasonForbidden)
	})
	t.Run("update adding a rule the user lacks is forbidden", func(t *testing.T) {
		var cur rbacv1.Role
		e.do("GET", rbacAPI+"/namespaces/team/roles/pods", nil, admin...).decode(t, &cur)
		cur.Rules = append(cur.Rules, secretRole.Rules...)
		e.do("PUT", rbacAPI+"/namespaces/team/roles/pods", &cur, bob...).expect(t, 403, metav1.StatusReasonForbidden)
		e.do("PATCH", rbacAPI+"/namespaces/team/roles/pods", `{"rules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"]}]}`,
			append(bob, "Content-Type", "application/merge-patch+json")...).expect(t, 403, metav1.StatusReasonForbidden)
		// Changing only labels of a role the user holds is fine.
		e.do("PATCH", rbacAPI+"/namespaces/team/roles/pods", `{"metadata":{"labels":{"a":"b"}}}`,
			append(bob, "Content-Type", "application/merge-patch+json")...).expect(t, 200, "")
	})
	t.Run("binding to a role the user lacks is forbidden", func(t *testing.T) {
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "secret-reader"},
			Subjects: []rbacv1.Subject{userSubject("carol")}}
		r := e.do("POST", rbacAPI+"/namespaces/team/rolebindings", rb, bob...)
		r.expect(t, 403, metav1.StatusReasonForbidden)
		if st := r.status(t); !strings.HasPrefix(st.Message, `rolebindings.rbac.authorization.k8s.io "b" is forbidden: user "bob"`) {
			t.Fatalf("message %q", st.Message)
		}
		rb.RoleRef.Name = "pod-reader"
		e.do("POST", rbacAPI+"/namespaces/team/rolebindings", rb, bob...).expect(t, 201, "")
		crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bob-grab"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects: []rbacv1.Subject{userSubject("bob")}}
		// bob has no right to create clusterrolebindings at all here, but
		// the escalation check itself refuses first, as in Kubernetes.
		e.do("POST", rbacAPI+"/clusterrolebindings", crb, bob...).expect(t, 403, metav1.StatusReasonForbidden)
	})
	t.Run("escalate allows granting anything", func(t *testing.T) {
		e.do("POST", rbacAPI+"/clusterroles", &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "role-escalator"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"escalate"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles"}}}}, admin...).expect(t, 201, "")
		e.createBinding("team", "bob-escalates", "ClusterRole", "role-escalator", userSubject("bob"))
		e.do("POST", rbacAPI+"/namespaces/team/roles", secretRole, bob...).expect(t, 201, "")
	})
	t.Run("bind allows binding a role the user lacks", func(t *testing.T) {
		e.do("POST", rbacAPI+"/clusterroles", &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "secret-binder"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"bind"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, ResourceNames: []string{"secret-reader"}}}}, admin...).expect(t, 201, "")
		e.createBinding("team", "bob-binds", "ClusterRole", "secret-binder", userSubject("bob"))
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "carol-secrets"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "secret-reader"},
			Subjects: []rbacv1.Subject{userSubject("carol")}}
		e.do("POST", rbacAPI+"/namespaces/team/rolebindings", rb, bob...).expect(t, 201, "")
		rb.Name, rb.RoleRef.Name = "carol-admin", "cluster-admin"
		e.do("POST", rbacAPI+"/namespaces/team/rolebindings", rb, bob...).expect(t, 403, metav1.StatusReasonForbidden)
	})
	t.Run("aggregation rule needs cluster-admin", func(t *testing.T) {
		agg := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "gather"}, AggregationRule: &rbacv1.AggregationRule{
			ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"x": "y"}}}}}
		e.do("POST", rbacAPI+"/clusterroles", &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "cr-writer"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"create"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}}}}, admin...).expect(t, 201, "")
		e.createBinding("", "bob-cr-writer", "ClusterRole", "cr-writer", userSubject("bob"))
		r := e.do("POST", rbacAPI+"/clusterroles", agg, bob...)
		r.expect(t, 403, metav1.StatusReasonForbidden)
		if st := r.status(t); st.Message != `clusterroles.rbac.authorization.k8s.io "gather" is forbidden: must have cluster-admin privileges to use the aggregationRule` {
			t.Fatalf("message %q", st.Message)
		}
		e.do("POST", rbacAPI+"/clusterroles", agg, admin...).expect(t, 201, "")
	})
	t.Run("writes without a user are the server's own", func(t *testing.T) {
		e.do("POST", rbacAPI+"/namespaces/team/roles", &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "internal"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}}).expect(t, 201, "")
	})
	t.Run("dry run is checked too", func(t *testing.T) {
		// bob may escalate in team by now, not in other.
		e.do("POST", rbacAPI+"/namespaces/other/roles?dryRun=All", &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "dry"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"delete"}, APIGroups: []string{""}, Resources: []string{"nodes"}}}}, bob...).expect(t, 403, metav1.StatusReasonForbidden)
	})
}

func TestPolicyCacheFollowsDeletes(t *testing.T) {
	e := newRBACEnv(t, nil)
	ctx := context.Background()
	authz := e.server.Authorizer()
	attrs := func() (bool, string) {
		d, reason, err := authz.Authorize(ctx, authorizationAttrs("dave", "get", "", "configmaps", "team"))
		if err != nil {
			t.Fatal(err)
		}
		return d == authorization.DecisionAllow, reason
	}
	if ok, _ := attrs(); ok {
		t.Fatal("allowed before any binding")
	}
	e.createBinding("team", "dave-view", "ClusterRole", "system:aggregate-to-view", userSubject("dave"))
	if ok, reason := attrs(); !ok {
		t.Fatalf("not allowed after the binding: %q", reason)
	}
	e.do("DELETE", "/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings/dave-view", nil, admin...).expect(t, 200, "")
	e.waitPolicy(func(c *rbacCache) bool { return len(c.RoleBindings("team")) == 0 })
	if ok, _ := attrs(); ok {
		t.Fatal("still allowed after the binding was deleted")
	}
	// Deleting the role a binding names makes it an evaluation error.
	e.createBinding("team", "dave-view", "ClusterRole", "system:aggregate-to-view", userSubject("dave"))
	e.do("DELETE", "/apis/rbac.authorization.k8s.io/v1/clusterroles/system:aggregate-to-view", nil, admin...).expect(t, 200, "")
	e.waitPolicy(func(c *rbacCache) bool { _, ok := c.ClusterRole("system:aggregate-to-view"); return !ok })
	if ok, reason := attrs(); ok || reason != `RBAC: clusterrole.rbac.authorization.k8s.io "system:aggregate-to-view" not found` {
		t.Fatalf("got %v %q", ok, reason)
	}
}

func authorizationAttrs(user, verb, group, resource, ns string) authorization.Attributes {
	return authorization.Attributes{User: &authentication.User{Name: user}, Verb: verb, ResourceRequest: true,
		APIGroup: group, APIVersion: "v1", Resource: resource, Namespace: ns}
}
