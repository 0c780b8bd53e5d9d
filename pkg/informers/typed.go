package informers

import (
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
)

// Pods returns the shared pod informer, read through the factory's Client.
func (f *Factory) Pods() (*cache.SharedIndexInformer[*corev1.Pod], error) {
	return ForResource(f, client.Pods)
}

// Nodes returns the shared node informer.
func (f *Factory) Nodes() (*cache.SharedIndexInformer[*corev1.Node], error) {
	return ForResource(f, client.Nodes)
}

// Namespaces returns the shared namespace informer.
func (f *Factory) Namespaces() (*cache.SharedIndexInformer[*corev1.Namespace], error) {
	return ForResource(f, client.Namespaces)
}

// Events returns the shared core/v1 event informer.
func (f *Factory) Events() (*cache.SharedIndexInformer[*corev1.Event], error) {
	return ForResource(f, client.Events)
}

// Deployments returns the shared deployment informer.
func (f *Factory) Deployments() (*cache.SharedIndexInformer[*appsv1.Deployment], error) {
	return ForResource(f, client.Deployments)
}

// ReplicaSets returns the shared replica set informer.
func (f *Factory) ReplicaSets() (*cache.SharedIndexInformer[*appsv1.ReplicaSet], error) {
	return ForResource(f, client.ReplicaSets)
}

// Leases returns the shared lease informer.
func (f *Factory) Leases() (*cache.SharedIndexInformer[*coordinationv1.Lease], error) {
	return ForResource(f, client.Leases)
}
