// Package resourcequota is the ResourceQuota admission plugin, as
// Kubernetes' plugin of that name: it refuses the creates and updates that
// would take a namespace past the hard limits of its ResourceQuotas, and
// charges the others to the quotas' status.used before the object is
// stored.
//
// Guarantees:
//   - Charged: creates of every namespaced object (object counts,
//     count/<resource>[.<group>] and the legacy configmaps, secrets,
//     replicationcontrollers and resourcequotas); pods (pods, count/pods,
//     cpu, memory, ephemeral-storage bare and as requests. and limits.,
//     huge pages, requests.<extended resource>) on create, on updates
//     of their resize subresource, and on updates that set or clear their
//     active deadline (moving them between the Terminating scopes); services (services, count/services,
//     services.loadbalancers, services.nodeports) and claims
//     (persistentvolumeclaims, count/persistentvolumeclaims,
//     requests.storage, and per storage class) on create and update, claims
//     also when their status changes the storage allocated (never
//     refused). An update is charged what it adds over the stored object;
//     deletes are not charged. Events are never charged.
//   - Quotas match as Kubernetes matches them: a quota charges an object
//     when its status.hard (written by the quota controller) tracks one of
//     the object's names and the object falls under its scopes; only pods
//     have scopes (Terminating, NotTerminating, BestEffort,
//     NotBestEffort, PriorityClass, CrossNamespacePodAffinity), a quota
//     with scopes charges no other object. A quota whose status.hard is
//     not yet written charges nothing.
//   - Refusals are 403 Forbidden with Kubernetes' messages: "exceeded
//     quota: <name>, requested: ..., used: ..., limited: ...", "failed
//     quota: <name>: must specify <name> for: <containers>" (a quota
//     tracking cpu or memory and a container not stating it, unless the
//     pod states pod-level resources), and "status
//     unknown for quota: <name>, resources: ..." (status.used missing a
//     tracked name).
//   - Atomic charge: status.used is written with the resourceVersion it
//     was decided on; on a conflict the quota is read again from the
//     store and the request decided again, at most 3 times, after which
//     the conflict is returned. Two requests can therefore never both use
//     the last unit of a quota, even across servers. Requests of one
//     namespace are decided one at a time in a server, and the quotas it
//     wrote are used until its cache catches up.
//   - Dry runs are decided but charge nothing.
//
// Usage is measured by internal/quota, shared with the quota controller,
// which gives back what deleted objects used.
package resourcequota
