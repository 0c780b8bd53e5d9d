// Package quota measures what objects use of a ResourceQuota, with the
// semantics of Kubernetes' quota evaluators. The resource quota controller
// sums it over a namespace to write status.used; the ResourceQuota
// admission plugin charges one object's share before it is stored.
//
// Every function is pure: it reads only its arguments (and a time passed
// in) and is safe for concurrent use. Returned lists are new and owned by
// the caller.
package quota
