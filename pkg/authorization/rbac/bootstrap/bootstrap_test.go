package bootstrap

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kplane/kplane/pkg/authentication"
	"github.com/kplane/kplane/pkg/authorization"
	"github.com/kplane/kplane/pkg/authorization/rbac"
)

// lister serves the bootstrap policy, with the aggregated roles filled in
// as the clusterrole-aggregation controller fills them.
type lister struct {
	roles map[string]*rbacv1.ClusterRole
	crbs  []*rbacv1.ClusterRoleBinding
}

func (l *lister) Role(string, string) (*rbacv1.Role, bool)  { return nil, false }
func (l *lister) RoleBindings(string) []*rbacv1.RoleBinding { return nil }
func (l *lister) ClusterRole(name string) (*rbacv1.ClusterRole, bool) {
	r, ok := l.roles[name]
	return r, ok
}
func (l *lister) ClusterRoleBindings() []*rbacv1.ClusterRoleBinding { return l.crbs }

func bootstrapLister(t *testing.T) *lister {
	t.Helper()
	l := &lister{roles: map[string]*rbacv1.ClusterRole{}}
	for _, r := range append(ClusterRoles(), ControllerRoles()...) {
		if _, dup := l.roles[r.Name]; dup {
			t.Fatalf("ClusterRole %s twice", r.Name)
		}
		l.roles[r.Name] = &r
	}
	// Aggregate admin, edit, view; view feeds edit which feeds admin, so
	// repeat until settled.
	for range 3 {
		for _, r := range l.roles {
			if r.AggregationRule == nil {
				continue
			}
			var rules []rbacv1.PolicyRule
			for _, sel := range r.AggregationRule.ClusterRoleSelectors {
				s, err := metav1.LabelSelectorAsSelector(&sel)
				if err != nil {
					t.Fatal(err)
				}
				for _, other := range l.roles {
					if other.Name != r.Name && s.Matches(labels.Set(other.Labels)) {
						rules = append(rules, other.Rules...)
					}
				}
			}
			r.Rules = rules
		}
	}
	for _, b := range append(ClusterRoleBindings(), ControllerRoleBindings()...) {
		if _, ok := l.roles[b.RoleRef.Name]; !ok {
			t.Fatalf("ClusterRoleBinding %s refers to missing role %s", b.Name, b.RoleRef.Name)
		}
		l.crbs = append(l.crbs, &b)
	}
	return l
}

func TestPolicyShape(t *testing.T) {
	l := bootstrapLister(t)
	for _, want := range []string{"cluster-admin", "admin", "edit", "view", "system:basic-user", "system:discovery",
		"system:public-info-viewer", "system:monitoring", "system:node", "system:node-proxier", "system:kube-scheduler",
		"system:kube-controller-manager", "system:auth-delegator", "system:aggregate-to-admin", "system:aggregate-to-edit",
		"system:aggregate-to-view", "system:certificates.k8s.io:certificatesigningrequests:nodeclient"} {
		if _, ok := l.roles[want]; !ok {
			t.Errorf("missing ClusterRole %s", want)
		}
	}
	for _, c := range []string{"deployment-controller", "replicaset-controller", "generic-garbage-collector", "namespace-controller",
		"clusterrole-aggregation-controller", "job-controller", "cronjob-controller", "statefulset-controller",
		"daemon-set-controller", "endpoint-controller", "endpointslice-controller", "service-account-controller",
		"root-ca-cert-publisher", "pod-garbage-collector", "disruption-controller", "resourcequota-controller",
		"replication-controller", "ttl-after-finished-controller"} {
		if _, ok := l.roles[ControllerRolePrefix+c]; !ok {
			t.Errorf("missing controller role %s", c)
		}
	}
	for _, r := range l.roles {
		if r.Labels[BootstrappingLabel] != "rbac-defaults" || r.Annotations[AutoUpdateAnnotation] != "true" {
			t.Errorf("%s lacks the bootstrap label or annotation: %v %v", r.Name, r.Labels, r.Annotations)
		}
		for _, rule := range r.Rules {
			if len(rule.Verbs) == 0 || (len(rule.NonResourceURLs) > 0) == (len(rule.Resources) > 0) {
				t.Errorf("%s has an invalid rule %+v", r.Name, rule)
			}
		}
	}
}

func TestBootstrapPolicyGrants(t *testing.T) {
	a, err := rbac.New(rbac.Config{Lister: bootstrapLister(t)})
	if err != nil {
		t.Fatal(err)
	}
	sa := func(name string) *authentication.User {
		return &authentication.User{Name: ControllerServiceAccount(name), Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}}
	}
	bound := func(name string, groups ...string) *authentication.User {
		return &authentication.User{Name: name, Groups: append(groups, authentication.AllAuthenticated)}
	}
	anon := &authentication.User{Name: authentication.Anonymous, Groups: []string{authentication.AllUnauthenticated}}
	resource := func(u *authentication.User, verb, group, res, sub, ns, name string) authorization.Attributes {
		return authorization.Attributes{User: u, Verb: verb, ResourceRequest: true, APIGroup: group, Resource: res, Subresource: sub, Namespace: ns, Name: name}
	}
	path := func(u *authentication.User, p string) authorization.Attributes {
		return authorization.Attributes{User: u, Verb: "get", Path: p}
	}
	cases := []struct {
		name  string
		attrs authorization.Attributes
		allow bool
	}{
		{"anonymous reads version", path(anon, "/version"), true},
		{"anonymous cannot discover", path(anon, "/apis"), false},
		{"authenticated discovers", path(bound("u"), "/apis/apps/v1"), true},
		{"authenticated reviews itself", resource(bound("u"), "create", "authorization.k8s.io", "selfsubjectaccessreviews", "", "", ""), true},
		{"authenticated cannot list pods", resource(bound("u"), "list", "", "pods", "", "default", ""), false},
		{"scheduler binds pods", resource(bound(KubeScheduler), "create", "", "pods", "binding", "default", "p"), true},
		{"scheduler cannot read secrets", resource(bound(KubeScheduler), "get", "", "secrets", "", "default", "s"), false},
		{"controller-manager lists everything", resource(bound(KubeControllerManager), "list", "apps", "deployments", "", "", ""), true},
		{"controller-manager renews its lease", resource(bound(KubeControllerManager), "update", "coordination.k8s.io", "leases", "", "kube-system", "kube-controller-manager"), true},
		{"controller-manager renews kplane's lease", resource(bound(KubeControllerManager), "update", "coordination.k8s.io", "leases", "", "kube-system", ControllerManagerLease), true},
		// With the controllers on their ServiceAccounts, the manager's
		// own user gets what kube-controller-manager's does: it reads
		// everything and mints the controllers' tokens, but writes none of
		// their objects.
		{"controller-manager cannot create pods", resource(bound(KubeControllerManager), "create", "", "pods", "", "default", ""), false},
		{"controller-manager cannot create replicasets", resource(bound(KubeControllerManager), "create", "apps", "replicasets", "", "default", ""), false},
		{"controller-manager cannot delete deployments", resource(bound(KubeControllerManager), "delete", "apps", "deployments", "", "default", "d"), false},
		{"controller-manager creates ServiceAccounts", resource(bound(KubeControllerManager), "create", "", "serviceaccounts", "", "kube-system", ""), true},
		{"controller-manager gets ServiceAccounts", resource(bound(KubeControllerManager), "get", "", "serviceaccounts", "", "kube-system", "job-controller"), true},
		{"controller-manager requests tokens", resource(bound(KubeControllerManager), "create", "", "serviceaccounts", "token", "kube-system", "job-controller"), true},
		{"controller-manager cannot impersonate", resource(bound(KubeControllerManager), "impersonate", "authentication.k8s.io", "users", "", "", "kplane-admin"), false},
		{"deployment controller cannot take a lease", resource(sa("deployment-controller"), "update", "coordination.k8s.io", "leases", "", "kube-system", "other"), false},
		{"node simulator binds pods", resource(bound(NodeSimulator, authentication.NodesGroup), "create", "", "pods", "binding", "default", "p"), true},
		{"node simulator cannot delete deployments", resource(bound(NodeSimulator, authentication.NodesGroup), "delete", "apps", "deployments", "", "default", "d"), false},
		{"node updates its status", resource(bound("system:node:n1", authentication.NodesGroup), "patch", "", "nodes", "status", "", "n1"), true},
		{"node cannot delete deployments", resource(bound("system:node:n1", authentication.NodesGroup), "delete", "apps", "deployments", "", "default", "d"), false},
		{"deployment controller writes status", resource(sa("deployment-controller"), "update", "apps", "deployments", "status", "default", "d"), true},
		{"deployment controller creates replicasets", resource(sa("deployment-controller"), "create", "apps", "replicasets", "", "default", ""), true},
		{"deployment controller cannot read secrets", resource(sa("deployment-controller"), "get", "", "secrets", "", "default", "s"), false},
		{"replicaset controller creates pods", resource(sa("replicaset-controller"), "create", "", "pods", "", "default", ""), true},
		{"garbage collector deletes anything", resource(sa("generic-garbage-collector"), "delete", "batch", "jobs", "", "default", "j"), true},
		{"aggregation controller escalates clusterroles", resource(sa("clusterrole-aggregation-controller"), "escalate", "rbac.authorization.k8s.io", "clusterroles", "", "", "admin"), true},
		{"masters may do anything", resource(bound("root", authentication.SystemPrivilegedGroup), "delete", "", "nodes", "", "", "n"), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, reason, _ := a.Authorize(context.Background(), c.attrs)
			if (d == authorization.DecisionAllow) != c.allow {
				t.Fatalf("got %v (%q), want allowed=%v", d, reason, c.allow)
			}
		})
	}
}

func TestAggregatedRolesFilled(t *testing.T) {
	l := bootstrapLister(t)
	a, _ := rbac.New(rbac.Config{Lister: l})
	u := &authentication.User{Name: "dev"}
	check := func(role string, verb, group, res, sub string, want bool) {
		t.Helper()
		l.crbs = []*rbacv1.ClusterRoleBinding{{ObjectMeta: metav1.ObjectMeta{Name: "b"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacGroup, Kind: "ClusterRole", Name: role}, Subjects: []rbacv1.Subject{userSubject("dev")}}}
		d, _, _ := a.Authorize(context.Background(), authorization.Attributes{User: u, Verb: verb, ResourceRequest: true, APIGroup: group, Resource: res, Subresource: sub, Namespace: "ns"})
		if (d == authorization.DecisionAllow) != want {
			t.Errorf("%s: %s %s/%s/%s allowed=%v, want %v", role, verb, group, res, sub, !want, want)
		}
	}
	check("view", "list", "apps", "deployments", "", true)
	check("view", "get", "", "secrets", "", false)
	check("view", "create", "apps", "deployments", "", false)
	check("edit", "create", "apps", "deployments", "", true)
	check("edit", "get", "", "secrets", "", true)
	check("edit", "list", "apps", "deployments", "", true) // through view
	check("edit", "create", "rbac.authorization.k8s.io", "roles", "", false)
	check("admin", "create", "rbac.authorization.k8s.io", "roles", "", true)
	check("admin", "update", "apps", "deployments", "scale", true)
}

func TestReconcileClusterRole(t *testing.T) {
	expected := clusterRole("r", r(v("get", "list"), g(core), "pods"))
	if _, changed := ReconcileClusterRole(&expected, &expected); changed {
		t.Error("reconciling the expected role changed it")
	}
	userAdded := expected.DeepCopy()
	userAdded.Rules = append(userAdded.Rules, r(v("get"), g(core), "secrets"))
	userAdded.Labels["team"] = "a"
	if _, changed := ReconcileClusterRole(userAdded, &expected); changed {
		t.Error("reconcile would change a role that holds everything expected and more")
	}
	narrowed := expected.DeepCopy()
	narrowed.Rules = []rbacv1.PolicyRule{r(v("get"), g(core), "pods"), r(v("get"), g(core), "secrets")}
	delete(narrowed.Labels, BootstrappingLabel)
	out, changed := ReconcileClusterRole(narrowed, &expected)
	if !changed {
		t.Fatal("missing rule not added")
	}
	if ok, _ := rbac.Covers(out.Rules, expected.Rules); !ok {
		t.Errorf("reconciled rules %v do not cover %v", out.Rules, expected.Rules)
	}
	if ok, _ := rbac.Covers(out.Rules, []rbacv1.PolicyRule{r(v("get"), g(core), "secrets")}); !ok {
		t.Error("reconcile removed a rule the user added")
	}
	if out.Labels[BootstrappingLabel] == "" {
		t.Error("label not restored")
	}
	if again, changed := ReconcileClusterRole(out, &expected); changed {
		t.Errorf("second reconcile changed %v", again)
	}
	narrowed.Annotations[AutoUpdateAnnotation] = "false"
	if _, changed := ReconcileClusterRole(narrowed, &expected); changed {
		t.Error("reconciled a role annotated autoupdate=false")
	}
	agg := aggregated("admin", AggregateToAdmin, nil)
	bare := agg.DeepCopy()
	bare.AggregationRule = nil
	bare.Rules = []rbacv1.PolicyRule{r(v("get"), g(core), "pods")} // filled by the controller
	out, changed = ReconcileClusterRole(bare, &agg)
	if !changed || out.AggregationRule == nil || len(out.AggregationRule.ClusterRoleSelectors) != 1 {
		t.Fatalf("aggregation rule not restored: %+v", out)
	}
	if _, changed := ReconcileClusterRole(out, &agg); changed {
		t.Error("aggregated role reconciled twice")
	}
}

func TestReconcileClusterRoleBinding(t *testing.T) {
	expected := binding("b", groupSubject("g"))
	if _, changed, _ := ReconcileClusterRoleBinding(&expected, &expected); changed {
		t.Error("reconciling the expected binding changed it")
	}
	extra := expected.DeepCopy()
	extra.Subjects = []rbacv1.Subject{userSubject("added-by-user")}
	out, changed, recreate := ReconcileClusterRoleBinding(extra, &expected)
	if !changed || recreate || len(out.Subjects) != 2 || out.Subjects[0].Name != "added-by-user" {
		t.Fatalf("got %+v changed %v recreate %v", out, changed, recreate)
	}
	if _, changed, _ := ReconcileClusterRoleBinding(out, &expected); changed {
		t.Error("second reconcile changed the binding")
	}
	moved := expected.DeepCopy()
	moved.RoleRef.Name = "other"
	out, changed, recreate = ReconcileClusterRoleBinding(moved, &expected)
	if !changed || !recreate || out.RoleRef != expected.RoleRef {
		t.Fatalf("roleRef change: %+v %v %v", out, changed, recreate)
	}
	moved.Annotations[AutoUpdateAnnotation] = "false"
	if _, changed, _ := ReconcileClusterRoleBinding(moved, &expected); changed {
		t.Error("reconciled a protected binding")
	}
}

// TestManagerControllerRoleBindings checks the opt-in bindings of a
// manager that runs its controllers as itself: they are not bootstrap
// policy, and with them its user may do what every controller may.
func TestManagerControllerRoleBindings(t *testing.T) {
	l := bootstrapLister(t)
	for _, b := range l.crbs {
		for _, s := range b.Subjects {
			if s.Kind == rbacv1.UserKind && s.Name == KubeControllerManager && b.RoleRef.Name != "system:kube-controller-manager" &&
				b.RoleRef.Name != "kplane:controller-manager-leader-election" {
				t.Errorf("bootstrap binding %s grants %s to the controller manager's user", b.Name, b.RoleRef.Name)
			}
		}
	}
	extra := ManagerControllerRoleBindings()
	if len(extra) != len(ControllerRoles()) {
		t.Fatalf("%d bindings for %d controller roles", len(extra), len(ControllerRoles()))
	}
	for _, b := range extra {
		if _, ok := l.roles[b.RoleRef.Name]; !ok {
			t.Fatalf("ClusterRoleBinding %s refers to missing role %s", b.Name, b.RoleRef.Name)
		}
		l.crbs = append(l.crbs, &b)
	}
	a, err := rbac.New(rbac.Config{Lister: l})
	if err != nil {
		t.Fatal(err)
	}
	u := &authentication.User{Name: KubeControllerManager, Groups: []string{authentication.AllAuthenticated}}
	for _, attrs := range []authorization.Attributes{
		{User: u, Verb: "create", ResourceRequest: true, Resource: "pods", Namespace: "default"},
		{User: u, Verb: "create", ResourceRequest: true, APIGroup: "apps", Resource: "replicasets", Namespace: "default"},
		{User: u, Verb: "update", ResourceRequest: true, APIGroup: "batch", Resource: "jobs", Subresource: "status", Namespace: "default", Name: "j"},
	} {
		if d, reason, _ := a.Authorize(context.Background(), attrs); d != authorization.DecisionAllow {
			t.Errorf("%s %s/%s/%s: %v (%q), want allowed with the extra bindings", attrs.Verb, attrs.APIGroup, attrs.Resource, attrs.Subresource, d, reason)
		}
	}
}
