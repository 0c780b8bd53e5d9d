package client_test

import (
	"testing"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/registry"
)

// TestPolicyDescriptorsMatchTheRegistry checks each policy descriptor
// against the resource the API server serves.
func TestPolicyDescriptorsMatchTheRegistry(t *testing.T) {
	served := map[string]registry.Info{}
	for _, st := range registry.Builtin() {
		served[st.Info().GroupVersionResource().String()] = st.Info()
	}
	type descriptor struct {
		gvr        string
		kind       string
		namespaced bool
	}
	for _, d := range []descriptor{
		{client.Roles.GroupVersionResource.String(), client.Roles.Kind, client.Roles.Namespaced},
		{client.RoleBindings.GroupVersionResource.String(), client.RoleBindings.Kind, client.RoleBindings.Namespaced},
		{client.ClusterRoles.GroupVersionResource.String(), client.ClusterRoles.Kind, client.ClusterRoles.Namespaced},
		{client.ClusterRoleBindings.GroupVersionResource.String(), client.ClusterRoleBindings.Kind, client.ClusterRoleBindings.Namespaced},
		{client.Ingresses.GroupVersionResource.String(), client.Ingresses.Kind, client.Ingresses.Namespaced},
		{client.IngressClasses.GroupVersionResource.String(), client.IngressClasses.Kind, client.IngressClasses.Namespaced},
		{client.NetworkPolicies.GroupVersionResource.String(), client.NetworkPolicies.Kind, client.NetworkPolicies.Namespaced},
		{client.PodDisruptionBudgets.GroupVersionResource.String(), client.PodDisruptionBudgets.Kind, client.PodDisruptionBudgets.Namespaced},
		{client.PriorityClasses.GroupVersionResource.String(), client.PriorityClasses.Kind, client.PriorityClasses.Namespaced},
		{client.RuntimeClasses.GroupVersionResource.String(), client.RuntimeClasses.Kind, client.RuntimeClasses.Namespaced},
		{client.CertificateSigningRequests.GroupVersionResource.String(), client.CertificateSigningRequests.Kind, client.CertificateSigningRequests.Namespaced},
	} {
		info, ok := served[d.gvr]
		if !ok {
			t.Errorf("%s is not served", d.gvr)
			continue
		}
		if info.GVK.Kind != d.kind || info.Namespaced != d.namespaced {
			t.Errorf("%s: descriptor %s namespaced=%v, served %s namespaced=%v", d.gvr, d.kind, d.namespaced, info.GVK.Kind, info.Namespaced)
		}
	}
}
