package tables

import "reflect"

// policyPrinters returns the printers of RBAC, networking (Ingresses, IngressClasses, NetworkPolicies), PodDisruptionBudgets, PriorityClasses, RuntimeClasses, CertificateSigningRequests.
func policyPrinters() map[reflect.Type]*printer {
	return map[reflect.Type]*printer{}
}
