package registry

// policyResources returns the strategies of RBAC, networking.k8s.io (Ingresses, IngressClasses, NetworkPolicies), PodDisruptionBudgets, PriorityClasses, RuntimeClasses and CertificateSigningRequests.
func policyResources() []Strategy {
	return []Strategy{
		Roles(), RoleBindings(), ClusterRoles(), ClusterRoleBindings(),
		Ingresses(), IngressClasses(), NetworkPolicies(),
		PodDisruptionBudgets(), PriorityClasses(), RuntimeClasses(),
		CertificateSigningRequests(),
	}
}
