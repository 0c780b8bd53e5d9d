package tables

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// tableCase is one object and the table kube-apiserver answers for it.
type tableCase struct {
	name      string
	obj       runtime.Object
	wantCols  []string // names, "*" marking priority 1
	wantCells []any
}

func runTables(t *testing.T, tests []tableCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table, err := Convert(tt.obj, now)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantCols, columnNames(table.ColumnDefinitions)); diff != "" {
				t.Errorf("columns (-want +got):\n%s", diff)
			}
			if len(table.Rows) != 1 {
				t.Fatalf("got %d rows, want 1", len(table.Rows))
			}
			if diff := cmp.Diff(tt.wantCells, table.Rows[0].Cells); diff != "" {
				t.Errorf("cells (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRBACTables(t *testing.T) {
	bindingCols := []string{"Name", "Role", "Age", "Users*", "Groups*", "ServiceAccounts*"}
	subjects := []rbacv1.Subject{
		{Kind: "User", Name: "alice"}, {Kind: "Group", Name: "devs"}, {Kind: "User", Name: "bob"},
		{Kind: "ServiceAccount", Namespace: "ci", Name: "runner"},
	}
	runTables(t, []tableCase{
		{
			name:      "role",
			obj:       &rbacv1.Role{ObjectMeta: objectMeta("reader", 5*time.Minute)},
			wantCols:  []string{"Name", "Created At"},
			wantCells: []any{"reader", "2026-11-29T11:55:00Z"},
		},
		{
			name:      "cluster role list",
			obj:       &rbacv1.ClusterRoleList{Items: []rbacv1.ClusterRole{{ObjectMeta: metav1.ObjectMeta{Name: "view", CreationTimestamp: ago(time.Hour)}}}},
			wantCols:  []string{"Name", "Created At"},
			wantCells: []any{"view", "2026-11-29T11:00:00Z"},
		},
		{
			name: "role binding",
			obj: &rbacv1.RoleBinding{ObjectMeta: objectMeta("read", 90*time.Second),
				RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"}, Subjects: subjects},
			wantCols:  bindingCols,
			wantCells: []any{"read", "ClusterRole/view", "90s", "alice, bob", "devs", "ci/runner"},
		},
		{
			name: "cluster role binding without subjects",
			obj: &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "admin", CreationTimestamp: ago(3 * time.Hour)},
				RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "cluster-admin"}},
			wantCols:  bindingCols,
			wantCells: []any{"admin", "ClusterRole/cluster-admin", "3h", "", "", ""},
		},
	})
}
