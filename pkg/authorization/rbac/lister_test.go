package rbac

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// policy is an in-memory Lister for tests.
type policy struct {
	roles        map[string]*rbacv1.Role // namespace/name
	roleBindings map[string][]*rbacv1.RoleBinding
	clusterRoles map[string]*rbacv1.ClusterRole
	crbs         []*rbacv1.ClusterRoleBinding
}

func newPolicy() *policy {
	return &policy{roles: map[string]*rbacv1.Role{}, roleBindings: map[string][]*rbacv1.RoleBinding{}, clusterRoles: map[string]*rbacv1.ClusterRole{}}
}

func (p *policy) Role(ns, name string) (*rbacv1.Role, bool) {
	r, ok := p.roles[ns+"/"+name]
	return r, ok
}
func (p *policy) RoleBindings(ns string) []*rbacv1.RoleBinding { return p.roleBindings[ns] }
func (p *policy) ClusterRole(name string) (*rbacv1.ClusterRole, bool) {
	r, ok := p.clusterRoles[name]
	return r, ok
}
func (p *policy) ClusterRoleBindings() []*rbacv1.ClusterRoleBinding { return p.crbs }

func (p *policy) role(ns, name string, rules ...rbacv1.PolicyRule) *policy {
	p.roles[ns+"/"+name] = &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules}
	return p
}

func (p *policy) clusterRole(name string, rules ...rbacv1.PolicyRule) *policy {
	p.clusterRoles[name] = &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
	return p
}

func (p *policy) roleBinding(ns, name string, ref rbacv1.RoleRef, subjects ...rbacv1.Subject) *policy {
	p.roleBindings[ns] = append(p.roleBindings[ns], &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, RoleRef: ref, Subjects: subjects})
	return p
}

func (p *policy) clusterRoleBinding(name string, ref rbacv1.RoleRef, subjects ...rbacv1.Subject) *policy {
	p.crbs = append(p.crbs, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: ref, Subjects: subjects})
	return p
}

func clusterRoleRef(name string) rbacv1.RoleRef {
	return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}
}

func roleRef(name string) rbacv1.RoleRef {
	return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}
}

func user(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

func group(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
}

func serviceAccount(ns, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}
}

func rule(verbs, groups, resources []string, names ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources, ResourceNames: names}
}

func urlRule(verbs []string, urls ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, NonResourceURLs: urls}
}

func l(s ...string) []string { return s }
