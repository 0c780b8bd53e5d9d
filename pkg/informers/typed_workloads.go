package informers

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
)

// Jobs returns the shared job informer.
func (f *Factory) Jobs() (*cache.SharedIndexInformer[*batchv1.Job], error) {
	return ForResource(f, client.Jobs)
}

// CronJobs returns the shared cron job informer.
func (f *Factory) CronJobs() (*cache.SharedIndexInformer[*batchv1.CronJob], error) {
	return ForResource(f, client.CronJobs)
}

// StatefulSets returns the shared stateful set informer.
func (f *Factory) StatefulSets() (*cache.SharedIndexInformer[*appsv1.StatefulSet], error) {
	return ForResource(f, client.StatefulSets)
}

// DaemonSets returns the shared daemon set informer.
func (f *Factory) DaemonSets() (*cache.SharedIndexInformer[*appsv1.DaemonSet], error) {
	return ForResource(f, client.DaemonSets)
}

// ControllerRevisions returns the shared controller revision informer.
func (f *Factory) ControllerRevisions() (*cache.SharedIndexInformer[*appsv1.ControllerRevision], error) {
	return ForResource(f, client.ControllerRevisions)
}

// ServiceAccounts returns the shared service account informer.
func (f *Factory) ServiceAccounts() (*cache.SharedIndexInformer[*corev1.ServiceAccount], error) {
	return ForResource(f, client.ServiceAccounts)
}

// PersistentVolumeClaims returns the shared persistent volume claim informer.
func (f *Factory) PersistentVolumeClaims() (*cache.SharedIndexInformer[*corev1.PersistentVolumeClaim], error) {
	return ForResource(f, client.PersistentVolumeClaims)
}

// PersistentVolumes returns the shared persistent volume informer.
func (f *Factory) PersistentVolumes() (*cache.SharedIndexInformer[*corev1.PersistentVolume], error) {
	return ForResource(f, client.PersistentVolumes)
}
