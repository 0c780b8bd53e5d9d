// Package limitranger is the LimitRanger admission plugin, as Kubernetes':
// the limitRanges of a namespace give the containers of its pods default
// requests and limits, and bound what pods and PersistentVolumeClaims may
// ask for.
//
// Mutation (pods being created, and the resize subresource): for every
// LimitRange of the namespace, each container and init container lacking a
// request or limit of a resource its Container item defaults
// (defaultRequest, default) gets it, and the pod is annotated
// kubernetes.io/limit-ranger with what was set, e.g.
// `LimitRanger plugin set: cpu, memory request for container app; cpu limit for container app`.
// Ephemeral containers are left alone.
//
// Validation, refusing with 403 Forbidden and Kubernetes' messages (several
// violations are listed together, in brackets): a Container item's min,
// max and maxLimitRequestRatio apply to every container and init
// container; a Pod item's to the pod's effective requests and limits (its
// containers' sums, at least its largest init container's, restartable
// init containers counted as containers, and pod-level resources for cpu
// and memory when set); a PersistentVolumeClaim item's min and max to a
// claim's storage requests, on create and on update. Pod updates other
// than resize are not looked at (containers' resources cannot change
// there), nor is an object being deleted.
//
// limitRanges are read from the admission.Source's cache. The plugin keeps
// no state and is safe for concurrent use.
package limitranger
