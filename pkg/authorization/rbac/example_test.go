package rbac_test

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/authentication"
	"github.com/kplane/kplane/pkg/authorization"
	"github.com/kplane/kplane/pkg/authorization/rbac"
)

// oneBinding is a Lister holding one ClusterRole bound to one user.
type oneBinding struct {
	role    *rbacv1.ClusterRole
	binding *rbacv1.ClusterRoleBinding
}

func (o oneBinding) Role(string, string) (*rbacv1.Role, bool)  { return nil, false }
func (o oneBinding) RoleBindings(string) []*rbacv1.RoleBinding { return nil }
func (o oneBinding) ClusterRole(name string) (*rbacv1.ClusterRole, bool) {
	return o.role, name == o.role.Name
}
func (o oneBinding) ClusterRoleBindings() []*rbacv1.ClusterRoleBinding {
	return []*rbacv1.ClusterRoleBinding{o.binding}
}

func Example() {
	lister := oneBinding{
		role: &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}}},
		binding: &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice-reads-pods"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "pod-reader"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}},
	}
	a, err := rbac.New(rbac.Config{Lister: lister})
	if err != nil {
		panic(err)
	}
	alice := &authentication.User{Name: "alice"}
	for _, verb := range []string{"list", "delete"} {
		d, reason, _ := a.Authorize(context.Background(), authorization.Attributes{
			User: alice, Verb: verb, ResourceRequest: true, APIVersion: "v1", Resource: "pods", Namespace: "default",
		})
		fmt.Println(verb, d == authorization.DecisionAllow, reason)
	}
	// Output:
	// list true RBAC: allowed by ClusterRoleBinding "alice-reads-pods" of ClusterRole "pod-reader" to User "alice"
	// delete false
}
