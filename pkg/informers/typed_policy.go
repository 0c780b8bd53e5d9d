package informers

import (
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
)

// ClusterRoles returns the shared cluster role informer.
func (f *Factory) ClusterRoles() (*cache.SharedIndexInformer[*rbacv1.ClusterRole], error) {
	return ForResource(f, client.ClusterRoles)
}
