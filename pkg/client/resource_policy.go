package client

import (
	certificatesv1 "k8s.io/api/certificates/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
)

// RBAC, networking, disruption budgets, priority and runtime classes and
// certificate signing requests.
var (
	Roles                      = Resource[*rbacv1.Role]{rbacv1.SchemeGroupVersion.WithResource("roles"), "Role", true}
	RoleBindings               = Resource[*rbacv1.RoleBinding]{rbacv1.SchemeGroupVersion.WithResource("rolebindings"), "RoleBinding", true}
	ClusterRoles               = Resource[*rbacv1.ClusterRole]{rbacv1.SchemeGroupVersion.WithResource("clusterroles"), "ClusterRole", false}
	ClusterRoleBindings        = Resource[*rbacv1.ClusterRoleBinding]{rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings"), "ClusterRoleBinding", false}
	Ingresses                  = Resource[*networkingv1.Ingress]{networkingv1.SchemeGroupVersion.WithResource("ingresses"), "Ingress", true}
	IngressClasses             = Resource[*networkingv1.IngressClass]{networkingv1.SchemeGroupVersion.WithResource("ingressclasses"), "IngressClass", false}
	NetworkPolicies            = Resource[*networkingv1.NetworkPolicy]{networkingv1.SchemeGroupVersion.WithResource("networkpolicies"), "NetworkPolicy", true}
	PodDisruptionBudgets       = Resource[*policyv1.PodDisruptionBudget]{policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets"), "PodDisruptionBudget", true}
	PriorityClasses            = Resource[*schedulingv1.PriorityClass]{schedulingv1.SchemeGroupVersion.WithResource("priorityclasses"), "PriorityClass", false}
	RuntimeClasses             = Resource[*nodev1.RuntimeClass]{nodev1.SchemeGroupVersion.WithResource("runtimeclasses"), "RuntimeClass", false}
	CertificateSigningRequests = Resource[*certificatesv1.CertificateSigningRequest]{certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests"), "CertificateSigningRequest", false}
)
