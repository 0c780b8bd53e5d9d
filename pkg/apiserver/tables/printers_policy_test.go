package tables

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
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

func TestNetworkingTables(t *testing.T) {
	prefix := networkingv1.PathTypePrefix
	rule := func(host string) networkingv1.IngressRule {
		return networkingv1.IngressRule{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
			Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &prefix}},
		}}}
	}
	ingCols := []string{"Name", "Class", "Hosts", "Address", "Ports", "Age"}
	runTables(t, []tableCase{
		{
			name: "ingress",
			obj: &networkingv1.Ingress{ObjectMeta: objectMeta("web", time.Minute),
				Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("nginx"), Rules: []networkingv1.IngressRule{rule("a.example.com"), rule("b.example.com")}},
				Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{Ingress: []networkingv1.IngressLoadBalancerIngress{
					{IP: "10.0.0.2"}, {Hostname: "lb"}, {IP: "10.0.0.2"},
				}}}},
			wantCols:  ingCols,
			wantCells: []any{"web", "nginx", "a.example.com,b.example.com", "10.0.0.2,lb", "80", "60s"},
		},
		{
			name: "ingress with many hosts, TLS, two addresses and only the class annotation",
			obj: &networkingv1.Ingress{
				ObjectMeta: metav1.ObjectMeta{Name: "many", CreationTimestamp: ago(time.Hour), Annotations: map[string]string{"kubernetes.io/ingress.class": "traefik"}},
				Spec: networkingv1.IngressSpec{
					Rules: []networkingv1.IngressRule{rule("a"), rule(""), rule("b"), rule("c"), rule("d"), rule("e")},
					TLS:   []networkingv1.IngressTLS{{Hosts: []string{"a"}}},
				},
				Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{Ingress: []networkingv1.IngressLoadBalancerIngress{
					{IP: "192.168.100.200"}, {IP: "192.168.100.201"},
				}}}},
			wantCols:  ingCols,
			wantCells: []any{"many", "<none>", "a,b,c + 3 more...", "192.168.100.200,192.168.100.201", "80, 443", "60m"},
		},
		{
			name:      "ingress with a default backend only",
			obj:       &networkingv1.Ingress{ObjectMeta: objectMeta("default", 2*time.Hour)},
			wantCols:  ingCols,
			wantCells: []any{"default", "<none>", "*", "", "80", "120m"},
		},
		{
			name: "ingress class",
			obj: &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "nginx", CreationTimestamp: ago(time.Minute)},
				Spec: networkingv1.IngressClassSpec{Controller: "k8s.io/ingress-nginx",
					Parameters: &networkingv1.IngressClassParametersReference{APIGroup: ptr.To("k8s.example.com"), Kind: "IngressParameters", Name: "lb"}}},
			wantCols:  []string{"Name", "Controller", "Parameters", "Age"},
			wantCells: []any{"nginx", "k8s.io/ingress-nginx", "IngressParameters.k8s.example.com/lb", "60s"},
		},
		{
			name:      "ingress class without parameters",
			obj:       &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "c", CreationTimestamp: ago(time.Minute)}, Spec: networkingv1.IngressClassSpec{Controller: "example.com/c"}},
			wantCols:  []string{"Name", "Controller", "Parameters", "Age"},
			wantCells: []any{"c", "example.com/c", "<none>", "60s"},
		},
		{
			name: "network policy",
			obj: &networkingv1.NetworkPolicy{ObjectMeta: objectMeta("db", time.Minute),
				Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}},
			wantCols:  []string{"Name", "Pod-Selector", "Age"},
			wantCells: []any{"db", "app=db", "60s"},
		},
		{
			name:      "network policy selecting every pod",
			obj:       &networkingv1.NetworkPolicy{ObjectMeta: objectMeta("deny-all", time.Minute)},
			wantCols:  []string{"Name", "Pod-Selector", "Age"},
			wantCells: []any{"deny-all", "<none>", "60s"},
		},
	})
}

func TestPolicyTables(t *testing.T) {
	two, quarter := intstr.FromInt32(2), intstr.FromString("25%")
	pdbCols := []string{"Name", "Min Available", "Max Unavailable", "Allowed Disruptions", "Age"}
	runTables(t, []tableCase{
		{
			name: "pdb with minAvailable",
			obj: &policyv1.PodDisruptionBudget{ObjectMeta: objectMeta("web", time.Minute),
				Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &two}, Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 1}},
			wantCols:  pdbCols,
			wantCells: []any{"web", "2", "N/A", int64(1), "60s"},
		},
		{
			name:      "pdb with maxUnavailable",
			obj:       &policyv1.PodDisruptionBudget{ObjectMeta: objectMeta("db", time.Minute), Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &quarter}},
			wantCols:  pdbCols,
			wantCells: []any{"db", "N/A", "25%", int64(0), "60s"},
		},
		{
			name: "priority class",
			obj: &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "system-node-critical", CreationTimestamp: ago(time.Minute)},
				Value: 2000001000, PreemptionPolicy: ptr.To(corev1.PreemptLowerPriority)},
			wantCols:  []string{"Name", "Value", "Global-Default", "Age", "PreemptionPolicy"},
			wantCells: []any{"system-node-critical", int64(2000001000), false, "60s", "PreemptLowerPriority"},
		},
		{
			name:      "runtime class",
			obj:       &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor", CreationTimestamp: ago(time.Minute)}, Handler: "runsc"},
			wantCols:  []string{"Name", "Handler", "Age"},
			wantCells: []any{"gvisor", "runsc", "60s"},
		},
	})
}

func TestCSRTable(t *testing.T) {
	cols := []string{"Name", "Age", "SignerName", "Requestor", "RequestedDuration", "Condition"}
	cond := func(t certificatesv1.RequestConditionType) certificatesv1.CertificateSigningRequestCondition {
		return certificatesv1.CertificateSigningRequestCondition{Type: t, Status: corev1.ConditionTrue}
	}
	runTables(t, []tableCase{
		{
			name: "pending",
			obj: &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "alice", CreationTimestamp: ago(time.Minute)},
				Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: "kubernetes.io/kube-apiserver-client", Username: "alice"}},
			wantCols:  cols,
			wantCells: []any{"alice", "60s", "kubernetes.io/kube-apiserver-client", "alice", "<none>", "Pending"},
		},
		{
			name: "approved and issued, with a duration",
			obj: &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "bob", CreationTimestamp: ago(time.Minute)},
				Spec:   certificatesv1.CertificateSigningRequestSpec{SignerName: "example.com/s", Username: "admin", ExpirationSeconds: ptr.To[int32](3600)},
				Status: certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{cond("Approved")}, Certificate: []byte("x")}},
			wantCols:  cols,
			wantCells: []any{"bob", "60s", "example.com/s", "admin", "60m", "Approved,Issued"},
		},
		{
			name: "denied and failed",
			obj: &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "eve", CreationTimestamp: ago(time.Minute)},
				Status: certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{cond("Approved"), cond("Denied"), cond("Failed")}}},
			wantCols:  cols,
			wantCells: []any{"eve", "60s", "<none>", "", "<none>", "Denied,Failed"},
		},
	})
}
