package client

import (
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/pkg/cache"
)

// Resource describes one API resource whose objects are T, such as
// *corev1.Pod for pods. The descriptors below cover kplane's built-in
// resources; describe any other resource with a literal:
//
//	var CronJobs = client.Resource[*batchv1.CronJob]{
//		GroupVersionResource: batchv1.SchemeGroupVersion.WithResource("cronjobs"),
//		Kind:                 "CronJob",
//		Namespaced:           true,
//	}
//
// A Resource is a plain value; the package-level descriptors are never
// modified by this package.
type Resource[T cache.Object] struct {
	// GroupVersionResource names the resource in URLs: group "" is the core
	// group under /api, any other group is under /apis/{group}.
	schema.GroupVersionResource
	// Kind is the type's kind, such as "Pod". It is written into request
	// bodies whose object has no kind set.
	Kind string
	// Namespaced says whether objects live in namespaces.
	Namespaced bool
}

// GroupVersionKind is the kind of the resource's objects.
func (r Resource[T]) GroupVersionKind() schema.GroupVersionKind {
	return r.GroupVersion().WithKind(r.Kind)
}

// Built-in resources.
var (
	Pods        = Resource[*corev1.Pod]{corev1.SchemeGroupVersion.WithResource("pods"), "Pod", true}
	Nodes       = Resource[*corev1.Node]{corev1.SchemeGroupVersion.WithResource("nodes"), "Node", false}
	Namespaces  = Resource[*corev1.Namespace]{corev1.SchemeGroupVersion.WithResource("namespaces"), "Namespace", false}
	Events      = Resource[*corev1.Event]{corev1.SchemeGroupVersion.WithResource("events"), "Event", true}
	ConfigMaps  = Resource[*corev1.ConfigMap]{corev1.SchemeGroupVersion.WithResource("configmaps"), "ConfigMap", true}
	Secrets     = Resource[*corev1.Secret]{corev1.SchemeGroupVersion.WithResource("secrets"), "Secret", true}
	Deployments = Resource[*appsv1.Deployment]{appsv1.SchemeGroupVersion.WithResource("deployments"), "Deployment", true}
	ReplicaSets = Resource[*appsv1.ReplicaSet]{appsv1.SchemeGroupVersion.WithResource("replicasets"), "ReplicaSet", true}
	Leases      = Resource[*coordinationv1.Lease]{coordinationv1.SchemeGroupVersion.WithResource("leases"), "Lease", true}
)

// CollectionPath is the URL path of the objects of gvr: in namespace ns
// when ns is not empty, otherwise across namespaces (or of a cluster-scoped
// resource). For example /api/v1/namespaces/default/pods and
// /apis/apps/v1/deployments. It does not validate its arguments.
func CollectionPath(gvr schema.GroupVersionResource, ns string) string {
	p := "/apis/" + gvr.Group + "/" + gvr.Version
	if gvr.Group == "" {
		p = "/api/" + gvr.Version
	}
	if ns != "" {
		p += "/namespaces/" + ns
	}
	return p + "/" + gvr.Resource
}
