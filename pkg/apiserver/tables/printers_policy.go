package tables

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
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
	add(printerOf(ingressColumns, ingressRow))
	add(printerOf(ingressClassColumns, ingressClassRow))
	add(printerOf(networkPolicyColumns, networkPolicyRow))
	add(printerOf(podDisruptionBudgetColumns, podDisruptionBudgetRow))
	add(printerOf(priorityClassColumns, priorityClassRow))
	add(printerOf(runtimeClassColumns, runtimeClassRow))
	add(printerOf(csrColumns, csrRow))
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

func ingressColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Class", Type: "string", Description: "The name of the IngressClass resource that should be used for the ingress"},
		{Name: "Hosts", Type: "string", Description: "Hosts that incoming requests are matched against before the ingress rule"},
		{Name: "Address", Type: "string", Description: "Address is a list containing ingress points for the load-balancer"},
		{Name: "Ports", Type: "string", Description: "Ports of TLS configurations that open"},
		ageColumn(),
	}
}

// maxHostsShown is how many hosts the Hosts cell lists before "+ N more...".
const maxHostsShown = 3

func ingressRow(ing *networkingv1.Ingress, now time.Time) ([]any, []metav1.TableRowCondition) {
	class := "<none>"
	if ing.Spec.IngressClassName != nil {
		class = *ing.Spec.IngressClassName
	}
	// The first hosts, and whether any rule comes after the cell is full.
	var hosts []string
	more := false
	for _, r := range ing.Spec.Rules {
		if len(hosts) == maxHostsShown {
			more = true
			break
		}
		if r.Host != "" {
			hosts = append(hosts, r.Host)
		}
	}
	hostCell := "*"
	if len(hosts) > 0 {
		hostCell = strings.Join(hosts, ",")
		if more {
			hostCell += fmt.Sprintf(" + %d more...", len(ing.Spec.Rules)-maxHostsShown)
		}
	}
	var addrs []string
	for _, lb := range ing.Status.LoadBalancer.Ingress {
		a := lb.IP
		if a == "" {
			a = lb.Hostname
		}
		if a != "" && !slices.Contains(addrs, a) {
			addrs = append(addrs, a)
		}
	}
	slices.Sort(addrs)
	// Tables are built wide, as kube-apiserver builds them, so the
	// addresses are not cut short.
	address := strings.Join(addrs, ",")
	ports := "80"
	if len(ing.Spec.TLS) != 0 {
		ports = "80, 443"
	}
	return []any{ing.Name, class, hostCell, address, ports, since(ing.CreationTimestamp.Time, now)}, nil
}

func ingressClassColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Controller", Type: "string", Description: "Controller that is responsible for handling this class"},
		{Name: "Parameters", Type: "string", Description: "A reference to a resource with additional parameters"},
		ageColumn(),
	}
}

func ingressClassRow(c *networkingv1.IngressClass, now time.Time) ([]any, []metav1.TableRowCondition) {
	params := "<none>"
	if p := c.Spec.Parameters; p != nil {
		params = p.Kind
		if p.APIGroup != nil {
			params += "." + *p.APIGroup
		}
		params += "/" + p.Name
	}
	return []any{c.Name, c.Spec.Controller, params, since(c.CreationTimestamp.Time, now)}, nil
}

func networkPolicyColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Pod-Selector", Type: "string", Description: networkingv1.NetworkPolicySpec{}.SwaggerDoc()["podSelector"]},
		ageColumn(),
	}
}

func networkPolicyRow(n *networkingv1.NetworkPolicy, now time.Time) ([]any, []metav1.TableRowCondition) {
	return []any{n.Name, metav1.FormatLabelSelector(&n.Spec.PodSelector), since(n.CreationTimestamp.Time, now)}, nil
}

func podDisruptionBudgetColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Min Available", Type: "string", Description: "The minimum number of pods that must be available."},
		{Name: "Max Unavailable", Type: "string", Description: "The maximum number of pods that may be unavailable."},
		{Name: "Allowed Disruptions", Type: "integer", Description: "Calculated number of pods that may be disrupted at this time."},
		ageColumn(),
	}
}

func podDisruptionBudgetRow(p *policyv1.PodDisruptionBudget, now time.Time) ([]any, []metav1.TableRowCondition) {
	minAvailable, maxUnavailable := "N/A", "N/A"
	if p.Spec.MinAvailable != nil {
		minAvailable = p.Spec.MinAvailable.String()
	}
	if p.Spec.MaxUnavailable != nil {
		maxUnavailable = p.Spec.MaxUnavailable.String()
	}
	return []any{p.Name, minAvailable, maxUnavailable, int64(p.Status.DisruptionsAllowed), since(p.CreationTimestamp.Time, now)}, nil
}

func priorityClassColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Value", Type: "integer", Description: schedulingv1.PriorityClass{}.SwaggerDoc()["value"]},
		{Name: "Global-Default", Type: "boolean", Description: schedulingv1.PriorityClass{}.SwaggerDoc()["globalDefault"]},
		ageColumn(),
		{Name: "PreemptionPolicy", Type: "string", Description: schedulingv1.PriorityClass{}.SwaggerDoc()["preemptionPolicy"]},
	}
}

func priorityClassRow(p *schedulingv1.PriorityClass, now time.Time) ([]any, []metav1.TableRowCondition) {
	policy := ""
	if p.PreemptionPolicy != nil {
		policy = string(*p.PreemptionPolicy)
	}
	return []any{p.Name, int64(p.Value), p.GlobalDefault, since(p.CreationTimestamp.Time, now), policy}, nil
}

func runtimeClassColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Handler", Type: "string", Description: nodev1.RuntimeClass{}.SwaggerDoc()["handler"]},
		ageColumn(),
	}
}

func runtimeClassRow(r *nodev1.RuntimeClass, now time.Time) ([]any, []metav1.TableRowCondition) {
	return []any{r.Name, r.Handler, since(r.CreationTimestamp.Time, now)}, nil
}

func csrColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		ageColumn(),
		{Name: "SignerName", Type: "string", Description: certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["signerName"]},
		{Name: "Requestor", Type: "string", Description: "Name of the user who created the request."},
		{Name: "RequestedDuration", Type: "string", Description: certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["expirationSeconds"]},
		{Name: "Condition", Type: "string", Description: "State of the request: Pending, Approved or Denied, then Failed and Issued when they apply."},
	}
}

func csrRow(c *certificatesv1.CertificateSigningRequest, now time.Time) ([]any, []metav1.TableRowCondition) {
	signer := "<none>"
	if c.Spec.SignerName != "" {
		signer = c.Spec.SignerName
	}
	duration := "<none>"
	if c.Spec.ExpirationSeconds != nil {
		d := time.Duration(*c.Spec.ExpirationSeconds) * time.Second
		duration = since(now.Add(-d), now)
	}
	return []any{c.Name, since(c.CreationTimestamp.Time, now), signer, c.Spec.Username, duration, csrCondition(c)}, nil
}

// csrCondition sums up a request's conditions: Denied over Approved over
// Pending, then ",Failed" and ",Issued" when they apply.
func csrCondition(c *certificatesv1.CertificateSigningRequest) string {
	var approved, denied, failed bool
	for _, cond := range c.Status.Conditions {
		switch cond.Type {
		case certificatesv1.CertificateApproved:
			approved = true
		case certificatesv1.CertificateDenied:
			denied = true
		case certificatesv1.CertificateFailed:
			failed = true
		}
	}
	out := "Pending"
	switch {
	case denied:
		out = "Denied"
	case approved:
		out = "Approved"
	}
	if failed {
		out += ",Failed"
	}
	if len(c.Status.Certificate) > 0 {
		out += ",Issued"
	}
	return out
}
