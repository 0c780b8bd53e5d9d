package rbac

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kplane/kplane/pkg/authentication"
	"github.com/kplane/kplane/pkg/authorization"
)

func newAuthorizer(t testing.TB, p *policy) *Authorizer {
	t.Helper()
	a, err := New(Config{Lister: p})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestNewRequiresLister(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Fatal("New without a Lister succeeded")
	}
}

func res(u *authentication.User, verb, group, resource, sub, ns, name string) authorization.Attributes {
	return authorization.Attributes{User: u, Verb: verb, ResourceRequest: true, APIGroup: group, APIVersion: "v1",
		Resource: resource, Subresource: sub, Namespace: ns, Name: name}
}

func nonRes(u *authentication.User, verb, path string) authorization.Attributes {
	return authorization.Attributes{User: u, Verb: verb, Path: path}
}

var alice = &authentication.User{Name: "alice", Groups: []string{"devs", authentication.AllAuthenticated}}

func TestAuthorizeRuleMatching(t *testing.T) {
	pods := rule(l("get", "list"), l(""), l("pods"))
	table := []struct {
		name  string
		rule  rbacv1.PolicyRule
		attrs authorization.Attributes
		allow bool
	}{
		{"verb listed", pods, res(alice, "get", "", "pods", "", "ns", "p"), true},
		{"verb not listed", pods, res(alice, "delete", "", "pods", "", "ns", "p"), false},
		{"watch is its own verb", pods, res(alice, "watch", "", "pods", "", "ns", ""), false},
		{"verb star", rule(l("*"), l(""), l("pods")), res(alice, "deletecollection", "", "pods", "", "ns", ""), true},
		{"special verb escalate needs listing", rule(l("get"), l("*"), l("*")), res(alice, "escalate", "rbac.authorization.k8s.io", "roles", "", "ns", ""), false},
		{"special verb bind listed", rule(l("bind"), l("rbac.authorization.k8s.io"), l("clusterroles")), res(alice, "bind", "rbac.authorization.k8s.io", "clusterroles", "", "", "view"), true},
		{"core group is empty string", pods, res(alice, "get", "apps", "pods", "", "ns", "p"), false},
		{"group star", rule(l("get"), l("*"), l("deployments")), res(alice, "get", "apps", "deployments", "", "ns", "d"), true},
		{"resource star matches subresources", rule(l("get"), l(""), l("*")), res(alice, "get", "", "pods", "log", "ns", "p"), true},
		{"resource does not match its subresource", pods, res(alice, "get", "", "pods", "log", "ns", "p"), false},
		{"subresource listed", rule(l("get"), l(""), l("pods/log")), res(alice, "get", "", "pods", "log", "ns", "p"), true},
		{"subresource does not match the resource", rule(l("get"), l(""), l("pods/log")), res(alice, "get", "", "pods", "", "ns", "p"), false},
		{"subresource of another resource", rule(l("get"), l(""), l("pods/log")), res(alice, "get", "", "podx", "log", "ns", "p"), false},
		{"star slash subresource", rule(l("update"), l("*"), l("*/scale")), res(alice, "update", "apps", "deployments", "scale", "ns", "d"), true},
		{"star slash subresource other sub", rule(l("update"), l("*"), l("*/scale")), res(alice, "update", "apps", "deployments", "status", "ns", "d"), false},
		{"star slash subresource not the resource", rule(l("update"), l("*"), l("*/scale")), res(alice, "update", "apps", "deployments", "", "ns", "d"), false},
		{"resource slash star is literal as kube", rule(l("get"), l(""), l("pods/*")), res(alice, "get", "", "pods", "log", "ns", "p"), false},
		{"subresource prefix is no match", rule(l("get"), l(""), l("pods/lo")), res(alice, "get", "", "pods", "log", "ns", "p"), false},
		{"resourceName listed", rule(l("get"), l(""), l("secrets"), "s1"), res(alice, "get", "", "secrets", "", "ns", "s1"), true},
		{"resourceName other", rule(l("get"), l(""), l("secrets"), "s1"), res(alice, "get", "", "secrets", "", "ns", "s2"), false},
		{"resourceNames never match list", rule(l("list"), l(""), l("secrets"), "s1"), res(alice, "list", "", "secrets", "", "ns", ""), false},
		{"resourceNames never match create", rule(l("create"), l(""), l("secrets"), "s1"), res(alice, "create", "", "secrets", "", "ns", ""), false},
		{"resourceName with subresource", rule(l("update"), l("apps"), l("deployments/scale"), "d"), res(alice, "update", "apps", "deployments", "scale", "ns", "d"), true},
		{"resource rule never matches a URL", rule(l("get"), l("*"), l("*")), nonRes(alice, "get", "/healthz"), false},
		{"URL exact", urlRule(l("get"), "/healthz"), nonRes(alice, "get", "/healthz"), true},
		{"URL exact other", urlRule(l("get"), "/healthz"), nonRes(alice, "get", "/healthz/ping"), false},
		{"URL prefix star", urlRule(l("get"), "/healthz*"), nonRes(alice, "get", "/healthz/ping"), true},
		{"URL path star", urlRule(l("get"), "/apis/*"), nonRes(alice, "get", "/apis/apps/v1"), true},
		{"URL path star needs the slash", urlRule(l("get"), "/apis/*"), nonRes(alice, "get", "/apis"), false},
		{"URL star", urlRule(l("*"), "*"), nonRes(alice, "post", "/anything"), true},
		{"URL verb", urlRule(l("get"), "/version"), nonRes(alice, "post", "/version"), false},
		{"URL rule never matches a resource", urlRule(l("*"), "*"), res(alice, "get", "", "pods", "", "ns", "p"), false},
	}
	for _, c := range table {
		t.Run(c.name, func(t *testing.T) {
			a := newAuthorizer(t, newPolicy().clusterRole("r", c.rule).clusterRoleBinding("b", clusterRoleRef("r"), user("alice")))
			d, reason, err := a.Authorize(context.Background(), c.attrs)
			if err != nil {
				t.Fatal(err)
			}
			if got := d == authorization.DecisionAllow; got != c.allow {
				t.Fatalf("allowed = %v (%q), want %v", got, reason, c.allow)
			}
			if d == authorization.DecisionDeny {
				t.Fatal("RBAC never denies")
			}
		})
	}
}

func TestAuthorizeSubjectsAndNamespaces(t *testing.T) {
	sa := &authentication.User{Name: "system:serviceaccount:ns1:robot", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns1"}}
	readPods := rule(l("get"), l(""), l("pods"))
	p := newPolicy().
		clusterRole("reader", readPods).
		role("ns1", "local-reader", readPods).
		role("ns2", "local-reader", readPods).
		clusterRoleBinding("by-group", clusterRoleRef("reader"), group("auditors")).
		clusterRoleBinding("sa-without-namespace", clusterRoleRef("reader"), rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "ghost"}).
		roleBinding("ns1", "alice-local", roleRef("local-reader"), user("alice")).
		roleBinding("ns1", "cr-in-ns", clusterRoleRef("reader"), user("bob")).
		roleBinding("ns1", "sa-local", roleRef("local-reader"), rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "robot"}).
		roleBinding("ns2", "sa-qualified", roleRef("local-reader"), serviceAccount("ns1", "robot"))
	a := newAuthorizer(t, p)
	bob := &authentication.User{Name: "bob"}
	auditor := &authentication.User{Name: "carol", Groups: []string{"auditors"}}
	ghost := &authentication.User{Name: "system:serviceaccount:default:ghost"}
	cases := []struct {
		name   string
		attrs  authorization.Attributes
		reason string // empty: denied
	}{
		{"group subject cluster-wide", res(auditor, "get", "", "pods", "", "any", "p"),
			`RBAC: allowed by ClusterRoleBinding "by-group" of ClusterRole "reader" to Group "auditors"`},
		{"group subject for cluster-scoped request", res(auditor, "get", "", "pods", "", "", ""),
			`RBAC: allowed by ClusterRoleBinding "by-group" of ClusterRole "reader" to Group "auditors"`},
		{"rolebinding in its namespace", res(alice, "get", "", "pods", "", "ns1", "p"),
			`RBAC: allowed by RoleBinding "alice-local/ns1" of Role "local-reader" to User "alice"`},
		{"rolebinding not in other namespaces", res(alice, "get", "", "pods", "", "ns2", "p"), ""},
		{"rolebinding not cluster-wide", res(alice, "get", "", "pods", "", "", ""), ""},
		{"rolebinding to clusterrole applies in its namespace", res(bob, "get", "", "pods", "", "ns1", "p"),
			`RBAC: allowed by RoleBinding "cr-in-ns/ns1" of ClusterRole "reader" to User "bob"`},
		{"rolebinding to clusterrole only there", res(bob, "get", "", "pods", "", "ns2", "p"), ""},
		{"service account defaults to the binding namespace", res(sa, "get", "", "pods", "", "ns1", "p"),
			`RBAC: allowed by RoleBinding "sa-local/ns1" of Role "local-reader" to ServiceAccount "robot/ns1"`},
		{"service account named with namespace", res(sa, "get", "", "pods", "", "ns2", "p"),
			`RBAC: allowed by RoleBinding "sa-qualified/ns2" of Role "local-reader" to ServiceAccount "robot/ns1"`},
		{"service account without namespace never matches cluster-wide", res(ghost, "get", "", "pods", "", "default", "p"), ""},
		{"user names are exact", res(&authentication.User{Name: "alice2"}, "get", "", "pods", "", "ns1", "p"), ""},
		{"no user", res(nil, "get", "", "pods", "", "ns1", "p"), ""},
		{"system:masters is allowed everything", res(&authentication.User{Name: "root", Groups: []string{"system:masters"}}, "escalate", "x", "y", "z", "", ""), " "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, reason, err := a.Authorize(context.Background(), c.attrs)
			if err != nil {
				t.Fatal(err)
			}
			if c.reason == "" {
				if d != authorization.DecisionNoOpinion {
					t.Fatalf("got %v %q, want NoOpinion", d, reason)
				}
				return
			}
			if d != authorization.DecisionAllow {
				t.Fatalf("got %v %q, want Allow", d, reason)
			}
			if strings.TrimSpace(c.reason) != "" && reason != c.reason {
				t.Fatalf("reason %q, want %q", reason, c.reason)
			}
		})
	}
}

func TestMissingRoleIsEvaluationError(t *testing.T) {
	p := newPolicy().
		clusterRole("reader", rule(l("get"), l(""), l("pods"))).
		clusterRoleBinding("dangling", clusterRoleRef("gone"), user("alice")).
		roleBinding("ns1", "dangling-role", roleRef("gone-too"), user("alice")).
		roleBinding("ns1", "ok", clusterRoleRef("reader"), user("alice"))
	a := newAuthorizer(t, p)
	ctx := context.Background()
	d, reason, _ := a.Authorize(ctx, res(alice, "get", "", "pods", "", "ns1", "p"))
	if d != authorization.DecisionAllow {
		t.Fatalf("a missing role hid the other bindings: %v %q", d, reason)
	}
	d, reason, _ = a.Authorize(ctx, res(alice, "delete", "", "pods", "", "ns1", "p"))
	want := `RBAC: [clusterrole.rbac.authorization.k8s.io "gone" not found, role.rbac.authorization.k8s.io "gone-too" not found]`
	if d != authorization.DecisionNoOpinion || reason != want {
		t.Fatalf("got %v %q, want NoOpinion %q", d, reason, want)
	}
	resRules, _, incomplete, err := a.RulesFor(ctx, alice, "ns1")
	if !incomplete || err == nil {
		t.Fatalf("RulesFor: incomplete %v err %v, want both", incomplete, err)
	}
	if diff := cmp.Diff([]authorization.ResourceRule{{Verbs: l("get"), APIGroups: l(""), Resources: l("pods")}}, resRules); diff != "" {
		t.Fatalf("RulesFor rules (-want +got):\n%s", diff)
	}
}

func TestRulesFor(t *testing.T) {
	p := newPolicy().
		clusterRole("discovery", urlRule(l("get"), "/api", "/api/*")).
		clusterRole("reader", rule(l("get", "list"), l(""), l("pods"))).
		role("ns1", "writer", rule(l("create"), l("apps"), l("deployments"))).
		clusterRoleBinding("d", clusterRoleRef("discovery"), group(authentication.AllAuthenticated)).
		roleBinding("ns1", "w", roleRef("writer"), user("alice")).
		roleBinding("ns2", "r", clusterRoleRef("reader"), user("alice"))
	a := newAuthorizer(t, p)
	resRules, nonRes, incomplete, err := a.RulesFor(context.Background(), alice, "ns1")
	if err != nil || incomplete {
		t.Fatal(err, incomplete)
	}
	if diff := cmp.Diff([]authorization.ResourceRule{{Verbs: l("create"), APIGroups: l("apps"), Resources: l("deployments")}}, resRules); diff != "" {
		t.Errorf("resource rules (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]authorization.NonResourceRule{{Verbs: l("get"), NonResourceURLs: l("/api", "/api/*")}}, nonRes); diff != "" {
		t.Errorf("non-resource rules (-want +got):\n%s", diff)
	}
	// Cluster-wide only: the namespaced bindings do not count.
	resRules, _, _, _ = a.RulesFor(context.Background(), alice, "")
	if len(resRules) != 0 {
		t.Errorf("cluster-wide rules %v, want none", resRules)
	}
}

// TestAggregatedClusterRoles checks the authorizer on a ClusterRole whose
// rules the aggregation controller has filled in from its parts.
func TestAggregatedClusterRoles(t *testing.T) {
	partA := rule(l("get"), l(""), l("pods"))
	partB := rule(l("list"), l("apps"), l("deployments"))
	p := newPolicy().
		clusterRole("monitoring-a", partA).clusterRole("monitoring-b", partB).
		clusterRole("monitoring", partA, partB). // as aggregated
		clusterRoleBinding("m", clusterRoleRef("monitoring"), user("alice"))
	a := newAuthorizer(t, p)
	for _, at := range []authorization.Attributes{
		res(alice, "get", "", "pods", "", "x", "p"),
		res(alice, "list", "apps", "deployments", "", "", ""),
	} {
		if d, _, _ := a.Authorize(context.Background(), at); d != authorization.DecisionAllow {
			t.Errorf("%+v not allowed by the aggregated role", at)
		}
	}
	if d, _, _ := a.Authorize(context.Background(), res(alice, "list", "", "pods", "", "x", "")); d == authorization.DecisionAllow {
		t.Error("the aggregated role allowed what no part grants")
	}
}

func TestIsServiceAccount(t *testing.T) {
	cases := []struct {
		user, ns, name string
		want           bool
	}{
		{"system:serviceaccount:ns:sa", "ns", "sa", true},
		{"system:serviceaccount:ns:sa", "n", "s:sa", false},
		{"system:serviceaccount:ns:sa", "ns", "s", false},
		{"system:serviceaccount:nsx:sa", "ns", "xsa", false},
		{"system:serviceaccounts:ns:sa", "ns", "sa", false},
		{"sa", "ns", "sa", false},
	}
	for _, c := range cases {
		if got := isServiceAccount(c.user, c.ns, c.name); got != c.want {
			t.Errorf("isServiceAccount(%q, %q, %q) = %v", c.user, c.ns, c.name, got)
		}
	}
}
