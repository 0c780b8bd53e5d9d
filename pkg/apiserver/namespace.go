package apiserver

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Namespaces are deleted in two steps, as in Kubernetes. A DELETE only
// marks the namespace Terminating (deletionTimestamp, status.phase); the
// "kubernetes" entry of spec.finalizers then holds it while the namespace
// controller deletes its content. The controller removes that entry through
// the finalize subresource, and the write that leaves both spec.finalizers
// and metadata.finalizers empty on a Terminating namespace deletes it.

// isNamespaces reports whether res is core/v1 namespaces.
func isNamespaces(res *resource) bool {
	return res.info.Resource == "namespaces" && res.info.GVK.Group == ""
}

// namespaceHeld reports whether obj is a namespace that spec.finalizers
// still keep from being deleted.
func namespaceHeld(obj runtime.Object) bool {
	ns, ok := obj.(*corev1.Namespace)
	return ok && len(ns.Spec.Finalizers) > 0
}

// keepNamespaceFinalizers makes a plain update or patch of a namespace keep
// its stored spec.finalizers: only the finalize subresource changes them.
func keepNamespaceFinalizers(obj, current runtime.Object) {
	ns, ok := obj.(*corev1.Namespace)
	cur, ok2 := current.(*corev1.Namespace)
	if ok && ok2 {
		ns.Spec.Finalizers = cur.Spec.Finalizers
	}
}

// prepareFinalize returns the stored namespace with only spec.finalizers
// taken from the client's obj (and its resourceVersion, the precondition).
func prepareFinalize(obj, current runtime.Object) runtime.Object {
	ns, ok := obj.(*corev1.Namespace)
	cur, ok2 := current.(*corev1.Namespace)
	if !ok || !ok2 {
		return obj
	}
	out := cur.DeepCopy()
	out.Spec.Finalizers = ns.Spec.Finalizers
	out.ResourceVersion = ns.ResourceVersion
	return out
}
