package rbac

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kplane/kplane/pkg/authentication"
)

func TestCovers(t *testing.T) {
	cases := []struct {
		name           string
		owner, servant []rbacv1.PolicyRule
		covered        bool
	}{
		{"same rule", []rbacv1.PolicyRule{rule(l("get"), l(""), l("pods"))}, []rbacv1.PolicyRule{rule(l("get"), l(""), l("pods"))}, true},
		{"union of owner rules", []rbacv1.PolicyRule{rule(l("get"), l(""), l("pods")), rule(l("list"), l(""), l("pods"))},
			[]rbacv1.PolicyRule{rule(l("get", "list"), l(""), l("pods"))}, true},
		{"missing verb", []rbacv1.PolicyRule{rule(l("get"), l(""), l("pods"))}, []rbacv1.PolicyRule{rule(l("get", "delete"), l(""), l("pods"))}, false},
		{"star verb covers any", []rbacv1.PolicyRule{rule(l("*"), l(""), l("pods"))}, []rbacv1.PolicyRule{rule(l("escalate"), l(""), l("pods"))}, true},
		{"star servant needs star owner", []rbacv1.PolicyRule{rule(l("get", "list"), l(""), l("pods"))}, []rbacv1.PolicyRule{rule(l("*"), l(""), l("pods"))}, false},
		{"star group", []rbacv1.PolicyRule{rule(l("get"), l("*"), l("pods"))}, []rbacv1.PolicyRule{rule(l("get"), l("apps"), l("pods"))}, true},
		{"star resource covers subresource", []rbacv1.PolicyRule{rule(l("get"), l(""), l("*"))}, []rbacv1.PolicyRule{rule(l("get"), l(""), l("pods/log"))}, true},
		{"star slash sub covers subresource", []rbacv1.PolicyRule{rule(l("get"), l(""), l("*/log"))}, []rbacv1.PolicyRule{rule(l("get"), l(""), l("pods/log"))}, true},
		{"resource does not cover subresource", []rbacv1.PolicyRule{rule(l("get"), l(""), l("pods"))}, []rbacv1.PolicyRule{rule(l("get"), l(""), l("pods/log"))}, false},
		{"unrestricted covers names", []rbacv1.PolicyRule{rule(l("get"), l(""), l("secrets"))}, []rbacv1.PolicyRule{rule(l("get"), l(""), l("secrets"), "a")}, true},
		{"names cover the same names", []rbacv1.PolicyRule{rule(l("get"), l(""), l("secrets"), "a", "b")}, []rbacv1.PolicyRule{rule(l("get"), l(""), l("secrets"), "b")}, true},
		{"names do not cover other names", []rbacv1.PolicyRule{rule(l("get"), l(""), l("secrets"), "a")}, []rbacv1.PolicyRule{rule(l("get"), l(""), l("secrets"), "b")}, false},
		{"names do not cover unrestricted", []rbacv1.PolicyRule{rule(l("get"), l(""), l("secrets"), "a")}, []rbacv1.PolicyRule{rule(l("get"), l(""), l("secrets"))}, false},
		{"URL prefix covers URL", []rbacv1.PolicyRule{urlRule(l("get"), "/apis/*")}, []rbacv1.PolicyRule{urlRule(l("get"), "/apis/apps")}, true},
		{"URL prefix covers narrower prefix", []rbacv1.PolicyRule{urlRule(l("get"), "/apis/*")}, []rbacv1.PolicyRule{urlRule(l("get"), "/apis/apps/*")}, true},
		{"URL does not cover prefix", []rbacv1.PolicyRule{urlRule(l("get"), "/apis")}, []rbacv1.PolicyRule{urlRule(l("get"), "/apis/*")}, false},
		{"resource rules do not cover URLs", []rbacv1.PolicyRule{rule(l("*"), l("*"), l("*"))}, []rbacv1.PolicyRule{urlRule(l("get"), "/healthz")}, false},
		{"nothing covers nothing", nil, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, missing := Covers(c.owner, c.servant)
			if got != c.covered {
				t.Fatalf("covered = %v (missing %v), want %v", got, missing, c.covered)
			}
			if got != (len(missing) == 0) {
				t.Fatalf("covered %v with missing %v", got, missing)
			}
		})
	}
}

func escalationPolicy() *policy {
	return newPolicy().
		clusterRole("pod-reader", rule(l("get", "list"), l(""), l("pods"))).
		clusterRole("secret-reader", rule(l("get"), l(""), l("secrets"))).
		clusterRole("escalator", rule(l("escalate"), l("rbac.authorization.k8s.io"), l("clusterroles", "roles"))).
		clusterRole("binder", rule(l("bind"), l("rbac.authorization.k8s.io"), l("clusterroles"), "secret-reader")).
		clusterRoleBinding("bob-pods", clusterRoleRef("pod-reader"), user("bob")).
		clusterRoleBinding("eve-escalates", clusterRoleRef("escalator"), user("eve")).
		roleBinding("team", "binder", clusterRoleRef("binder"), user("bob"))
}

func TestCheckRoleWrite(t *testing.T) {
	a := newAuthorizer(t, escalationPolicy())
	bob := &authentication.User{Name: "bob", Groups: []string{"devs", "system:authenticated"}}
	eve := &authentication.User{Name: "eve"}
	root := &authentication.User{Name: "root", Groups: []string{"system:masters"}}
	ctx := context.Background()
	cases := []struct {
		name    string
		u       *authentication.User
		w       RoleWrite
		wantErr string
	}{
		{"rules held", bob, RoleWrite{Resource: "clusterroles", Name: "x", Rules: []rbacv1.PolicyRule{rule(l("get"), l(""), l("pods"))}}, ""},
		{"rules not held", bob, RoleWrite{Resource: "clusterroles", Name: "x", Rules: []rbacv1.PolicyRule{rule(l("get"), l(""), l("secrets")), rule(l("list"), l(""), l("pods"))}},
			"clusterroles.rbac.authorization.k8s.io \"x\" is forbidden: user \"bob\" (groups=[\"devs\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}"},
		{"missing verbs compacted", bob, RoleWrite{Resource: "roles", Namespace: "team", Name: "x", Rules: []rbacv1.PolicyRule{rule(l("get", "delete", "watch"), l(""), l("pods", "secrets"))}},
			"roles.rbac.authorization.k8s.io \"x\" is forbidden: user \"bob\" (groups=[\"devs\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"delete\" \"watch\"]}\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"delete\" \"watch\"]}"},
		{"escalate allows anything", eve, RoleWrite{Resource: "clusterroles", Name: "x", Rules: []rbacv1.PolicyRule{rule(l("*"), l("*"), l("*"))}}, ""},
		{"system:masters allowed", root, RoleWrite{Resource: "clusterroles", Name: "x", Rules: []rbacv1.PolicyRule{rule(l("*"), l("*"), l("*"))}, SetsAggregation: true}, ""},
		{"aggregation needs full authority", bob, RoleWrite{Resource: "clusterroles", Name: "agg", SetsAggregation: true},
			"clusterroles.rbac.authorization.k8s.io \"agg\" is forbidden: must have cluster-admin privileges to use the aggregationRule"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := a.CheckRoleWrite(ctx, nil, c.u, c.w)
			checkForbidden(t, err, c.wantErr)
		})
	}
}

func TestCheckBindingWrite(t *testing.T) {
	a := newAuthorizer(t, escalationPolicy())
	bob := &authentication.User{Name: "bob"}
	ctx := context.Background()
	cases := []struct {
		name    string
		w       BindingWrite
		wantErr string
	}{
		{"holds the role's rules", BindingWrite{Resource: "clusterrolebindings", Name: "b", RoleRef: clusterRoleRef("pod-reader")}, ""},
		{"lacks the role's rules", BindingWrite{Resource: "clusterrolebindings", Name: "b", RoleRef: clusterRoleRef("secret-reader")},
			"clusterrolebindings.rbac.authorization.k8s.io \"b\" is forbidden: user \"bob\" (groups=[]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}"},
		{"bind on the role in the namespace", BindingWrite{Resource: "rolebindings", Namespace: "team", Name: "b", RoleRef: clusterRoleRef("secret-reader")}, ""},
		{"bind is per namespace", BindingWrite{Resource: "rolebindings", Namespace: "other", Name: "b", RoleRef: clusterRoleRef("secret-reader")},
			"rolebindings.rbac.authorization.k8s.io \"b\" is forbidden: user \"bob\" (groups=[]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}"},
		{"bind is per role name", BindingWrite{Resource: "rolebindings", Namespace: "team", Name: "b", RoleRef: clusterRoleRef("escalator")},
			"rolebindings.rbac.authorization.k8s.io \"b\" is forbidden: user \"bob\" (groups=[]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"rbac.authorization.k8s.io\"], Resources:[\"clusterroles\"], Verbs:[\"escalate\"]}\n{APIGroups:[\"rbac.authorization.k8s.io\"], Resources:[\"roles\"], Verbs:[\"escalate\"]}"},
		{"missing role", BindingWrite{Resource: "rolebindings", Namespace: "team", Name: "b", RoleRef: roleRef("nope")},
			`rolebindings.rbac.authorization.k8s.io "b" is forbidden: role.rbac.authorization.k8s.io "nope" not found`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkForbidden(t, a.CheckBindingWrite(ctx, nil, bob, c.w), c.wantErr)
		})
	}
}

func checkForbidden(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
		return
	}
	if !apierrors.IsForbidden(err) {
		t.Fatalf("got %v, want Forbidden", err)
	}
	if err.Error() != want {
		t.Fatalf("message\n%s\nwant\n%s", err, want)
	}
}
