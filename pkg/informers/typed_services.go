//lint:file-ignore SA1019 core/v1 Endpoints is deprecated but served, as kube-apiserver 1.37 still serves it

package informers

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
)

// Services returns the shared service informer.
func (f *Factory) Services() (*cache.SharedIndexInformer[*corev1.Service], error) {
	return ForResource(f, client.Services)
}

// Endpoints returns the shared endpoints informer.
func (f *Factory) Endpoints() (*cache.SharedIndexInformer[*corev1.Endpoints], error) {
	return ForResource(f, client.Endpoints)
}

// EndpointSlices returns the shared endpoint slice informer.
func (f *Factory) EndpointSlices() (*cache.SharedIndexInformer[*discoveryv1.EndpointSlice], error) {
	return ForResource(f, client.EndpointSlices)
}

// ConfigMaps returns the shared config map informer.
func (f *Factory) ConfigMaps() (*cache.SharedIndexInformer[*corev1.ConfigMap], error) {
	return ForResource(f, client.ConfigMaps)
}

// Secrets returns the shared secret informer.
func (f *Factory) Secrets() (*cache.SharedIndexInformer[*corev1.Secret], error) {
	return ForResource(f, client.Secrets)
}

// PodDisruptionBudgets returns the shared pod disruption budget informer.
func (f *Factory) PodDisruptionBudgets() (*cache.SharedIndexInformer[*policyv1.PodDisruptionBudget], error) {
	return ForResource(f, client.PodDisruptionBudgets)
}

// ResourceQuotas returns the shared resource quota informer.
func (f *Factory) ResourceQuotas() (*cache.SharedIndexInformer[*corev1.ResourceQuota], error) {
	return ForResource(f, client.ResourceQuotas)
}

// ReplicationControllers returns the shared replication controller informer.
func (f *Factory) ReplicationControllers() (*cache.SharedIndexInformer[*corev1.ReplicationController], error) {
	return ForResource(f, client.ReplicationControllers)
}

// LimitRanges returns the shared limit range informer.
func (f *Factory) LimitRanges() (*cache.SharedIndexInformer[*corev1.LimitRange], error) {
	return ForResource(f, client.LimitRanges)
}

// Roles returns the shared role informer.
func (f *Factory) Roles() (*cache.SharedIndexInformer[*rbacv1.Role], error) {
	return ForResource(f, client.Roles)
}

// RoleBindings returns the shared role binding informer.
func (f *Factory) RoleBindings() (*cache.SharedIndexInformer[*rbacv1.RoleBinding], error) {
	return ForResource(f, client.RoleBindings)
}

// ClusterRoleBindings returns the shared cluster role binding informer.
func (f *Factory) ClusterRoleBindings() (*cache.SharedIndexInformer[*rbacv1.ClusterRoleBinding], error) {
	return ForResource(f, client.ClusterRoleBindings)
}
