package tables

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// policyPrinters returns the printers of RBAC, networking (Ingresses, IngressClasses, NetworkPolicies), PodDisruptionBudgets, PriorityClasses, RuntimeClasses, CertificateSigningRequests.
func policyPrinters() map[reflect.Type]*printer {
	out := map[reflect.Type]*printer{}
	add := func(t reflect.Type, p *printer) { out[t] = p }
	add(printerOf(roleColumns, roleRow))
	add(printerOf(roleColumns, clusterRoleRow))
	add(printerOf(roleBindingColumns, roleBindingRow))
	add(printerOf(roleBindingColumns, clusterRoleBindingRow))
	return out
}

func roleColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Created At", Type: "date", Description: metaDoc("creationTimestamp")},
	}
}

func createdAt(m metav1.ObjectMeta) string {
	return m.CreationTimestamp.UTC().Format(time.RFC3339)
}

func roleRow(r *rbacv1.Role, _ time.Time) ([]any, []metav1.TableRowCondition) {
	return []any{r.Name, createdAt(r.ObjectMeta)}, nil
}

func clusterRoleRow(r *rbacv1.ClusterRole, _ time.Time) ([]any, []metav1.TableRowCondition) {
	return []any{r.Name, createdAt(r.ObjectMeta)}, nil
}

func roleBindingColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Role", Type: "string", Description: rbacv1.RoleBinding{}.SwaggerDoc()["roleRef"]},
		ageColumn(),
		{Name: "Users", Type: "string", Priority: 1, Description: "Users in the roleBinding"},
		{Name: "Groups", Type: "string", Priority: 1, Description: "Groups in the roleBinding"},
		{Name: "ServiceAccounts", Type: "string", Priority: 1, Description: "ServiceAccounts in the roleBinding"},
	}
}

// bindingCells are the Role cell and the wide subject cells of a binding:
// service accounts as namespace/name, as kubectl shows them.
func bindingCells(ref rbacv1.RoleRef, subjects []rbacv1.Subject) (role, users, groups, sas string) {
	var u, g, s []string
	for _, sub := range subjects {
		switch sub.Kind {
		case rbacv1.UserKind:
			u = append(u, sub.Name)
		case rbacv1.GroupKind:
			g = append(g, sub.Name)
		case rbacv1.ServiceAccountKind:
			s = append(s, sub.Namespace+"/"+sub.Name)
		}
	}
	return fmt.Sprintf("%s/%s", ref.Kind, ref.Name), strings.Join(u, ", "), strings.Join(g, ", "), strings.Join(s, ", ")
}

func roleBindingRow(b *rbacv1.RoleBinding, now time.Time) ([]any, []metav1.TableRowCondition) {
	role, users, groups, sas := bindingCells(b.RoleRef, b.Subjects)
	return []any{b.Name, role, since(b.CreationTimestamp.Time, now), users, groups, sas}, nil
}

func clusterRoleBindingRow(b *rbacv1.ClusterRoleBinding, now time.Time) ([]any, []metav1.TableRowCondition) {
	role, users, groups, sas := bindingCells(b.RoleRef, b.Subjects)
	return []any{b.Name, role, since(b.CreationTimestamp.Time, now), users, groups, sas}, nil
}
