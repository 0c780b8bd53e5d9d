package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validationCase is one object run through a strategy's defaulting and
// validation, with the errors expected as "field: message" strings (what
// kube-apiserver puts in a Status' causes and message).
type validationCase struct {
	name string
	obj  runtime.Object
	want []string
}

// errorStrings renders errs as kube-apiserver prints each one.
func errorStrings(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

// runValidation defaults and validates each case's object as a create does.
func runValidation(t *testing.T, st Strategy, tests []validationCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := tt.obj.DeepCopyObject()
			st.PrepareForCreate(obj)
			st.Default(obj)
			if diff := cmp.Diff(tt.want, errorStrings(st.Validate(obj))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func role(rules ...rbacv1.PolicyRule) *rbacv1.Role {
	return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "default"}, Rules: rules}
}

func clusterRole(name string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
}

var readPods = rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}

func TestRoleValidation(t *testing.T) {
	runValidation(t, Roles(), []validationCase{
		{"valid", role(readPods), nil},
		{"colon in name", func() runtime.Object { r := role(readPods); r.Name = "system:reader"; return r }(), nil},
		{"slash in name", func() runtime.Object { r := role(readPods); r.Name = "a/b"; return r }(),
			[]string{`metadata.name: Invalid value: "a/b": may not contain '/'`}},
		{"no verbs", role(rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}}),
			[]string{"rules[0].verbs: Required value: verbs must contain at least one value"}},
		{"no groups or resources", role(rbacv1.PolicyRule{Verbs: []string{"get"}}), []string{
			"rules[0].apiGroups: Required value: resource rules must supply at least one api group",
			"rules[0].resources: Required value: resource rules must supply at least one resource",
		}},
		{"non-resource URL", role(rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}),
			[]string{`rules[0].nonResourceURLs: Invalid value: ["/healthz"]: namespaced rules cannot apply to non-resource URLs`}},
	})
}

func TestClusterRoleValidation(t *testing.T) {
	runValidation(t, ClusterRoles(), []validationCase{
		{"valid", clusterRole("c", readPods), nil},
		{"non-resource URL", clusterRole("c", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}), nil},
		{"mixed", clusterRole("c", rbacv1.PolicyRule{Verbs: []string{"get"}, Resources: []string{"pods"}, NonResourceURLs: []string{"/healthz"}}),
			[]string{`rules[0].nonResourceURLs: Invalid value: ["/healthz"]: rules cannot apply to both regular resources and non-resource URLs`}},
		{"namespaced", func() runtime.Object { c := clusterRole("c", readPods); c.Namespace = "x"; return c }(),
			[]string{"metadata.namespace: Forbidden: not allowed on this type"}},
		{"empty aggregation rule", func() runtime.Object {
			c := clusterRole("c")
			c.AggregationRule = &rbacv1.AggregationRule{}
			return c
		}(), []string{"aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil"}},
		{"bad aggregation selector", func() runtime.Object {
			c := clusterRole("c")
			c.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"a": "-"}}}}
			return c
		}(), []string{`aggregationRule.clusterRoleSelectors[0].matchLabels: Invalid value: "-": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`}},
	})
}

func roleBinding(ref rbacv1.RoleRef, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "default"}, RoleRef: ref, Subjects: subjects}
}

func TestRoleBindingValidation(t *testing.T) {
	toRole := rbacv1.RoleRef{Kind: "Role", Name: "r"}
	runValidation(t, RoleBindings(), []validationCase{
		{"valid", roleBinding(toRole, rbacv1.Subject{Kind: "User", Name: "alice"}, rbacv1.Subject{Kind: "ServiceAccount", Name: "default"}), nil},
		{"cluster role", roleBinding(rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"}, rbacv1.Subject{Kind: "Group", Name: "devs"}), nil},
		{"bad role ref", roleBinding(rbacv1.RoleRef{APIGroup: "example.com", Kind: "Thing"}), []string{
			`roleRef.apiGroup: Unsupported value: "example.com": supported values: "rbac.authorization.k8s.io"`,
			`roleRef.kind: Unsupported value: "Thing": supported values: "Role", "ClusterRole"`,
			"roleRef.name: Required value",
		}},
		{"bad subjects", roleBinding(toRole,
			rbacv1.Subject{Kind: "ServiceAccount", Name: "Bad_Name", APIGroup: "rbac.authorization.k8s.io"},
			rbacv1.Subject{Kind: "User", Name: "bob", APIGroup: "example.com"},
			rbacv1.Subject{Kind: "Robot", Name: "r2"},
			rbacv1.Subject{Kind: "Group"},
		), []string{
			`subjects[0].name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			`subjects[0].apiGroup: Unsupported value: "rbac.authorization.k8s.io": supported values: ""`,
			`subjects[1].apiGroup: Unsupported value: "example.com": supported values: "rbac.authorization.k8s.io"`,
			`subjects[2].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"`,
			"subjects[3].name: Required value",
		}},
	})
}

func TestClusterRoleBindingValidation(t *testing.T) {
	crb := func(ref rbacv1.RoleRef, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "system:b"}, RoleRef: ref, Subjects: subjects}
	}
	view := rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"}
	runValidation(t, ClusterRoleBindings(), []validationCase{
		{"valid", crb(view, rbacv1.Subject{Kind: "ServiceAccount", Name: "sa", Namespace: "kube-system"}), nil},
		{"role ref to Role", crb(rbacv1.RoleRef{Kind: "Role", Name: "r"}),
			[]string{`roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"`}},
		{"service account without namespace", crb(view, rbacv1.Subject{Kind: "ServiceAccount", Name: "sa"}),
			[]string{"subjects[0].namespace: Required value"}},
		{"bad role name", crb(rbacv1.RoleRef{Kind: "ClusterRole", Name: ".."}),
			[]string{`roleRef.name: Invalid value: "..": may not be '..'`}},
	})
}

func TestBindingDefaults(t *testing.T) {
	b := roleBinding(rbacv1.RoleRef{Kind: "Role", Name: "r"},
		rbacv1.Subject{Kind: "User", Name: "u"}, rbacv1.Subject{Kind: "Group", Name: "g"}, rbacv1.Subject{Kind: "ServiceAccount", Name: "s"})
	RoleBindings().Default(b)
	if b.RoleRef.APIGroup != rbacv1.GroupName {
		t.Errorf("roleRef.apiGroup %q", b.RoleRef.APIGroup)
	}
	got := []string{b.Subjects[0].APIGroup, b.Subjects[1].APIGroup, b.Subjects[2].APIGroup}
	if diff := cmp.Diff([]string{rbacv1.GroupName, rbacv1.GroupName, ""}, got); diff != "" {
		t.Errorf("subject groups (-want +got):\n%s", diff)
	}
}

func TestRoleRefImmutable(t *testing.T) {
	st := RoleBindings()
	old := roleBinding(rbacv1.RoleRef{Kind: "Role", Name: "r"}, rbacv1.Subject{Kind: "User", Name: "u"})
	st.Default(old)
	old.ResourceVersion = "1"
	added := old.DeepCopy()
	added.Subjects = append(added.Subjects, rbacv1.Subject{Kind: "User", Name: "v", APIGroup: rbacv1.GroupName})
	if errs := st.ValidateUpdate(added, old); len(errs) != 0 {
		t.Errorf("adding a subject: %v", errs)
	}
	moved := old.DeepCopy()
	moved.RoleRef.Name = "other"
	errs := st.ValidateUpdate(moved, old)
	if len(errs) != 1 || errs[0].Field != "roleRef" || errs[0].Detail != "cannot change roleRef" {
		t.Errorf("changing roleRef: %v", errs)
	}
	cst := ClusterRoleBindings()
	cold := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "c", ResourceVersion: "1"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "view", APIGroup: rbacv1.GroupName}}
	cnew := cold.DeepCopy()
	cnew.RoleRef.Name = "edit"
	if errs := cst.ValidateUpdate(cnew, cold); len(errs) != 1 || errs[0].Detail != "cannot change roleRef" {
		t.Errorf("changing a cluster binding's roleRef: %v", errs)
	}
}
