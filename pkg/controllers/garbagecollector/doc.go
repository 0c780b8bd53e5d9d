// Package garbagecollector deletes objects whose owners are gone, with the
// semantics of Kubernetes' garbage collector, and carries out the
// foreground and orphan deletions the API server leaves to it.
//
// A graph builder, fed by an informer of every monitored resource, keeps a
// node per object (its identity, owners, dependents, and whether it is
// being deleted or deleting its dependents) and a virtual node for each
// owner named by an ownerReference but not (yet) observed. Changes are
// applied by one goroutine in the order the informers delivered them.
//
// Workers then act on two rate-limited queues:
//
//   - attempt to delete: a dependent whose owners are all verified absent
//     (a live read finds no object of that name, or one with another uid)
//     is deleted, Background by default (or per its own orphan or
//     foregroundDeletion finalizer). If some owner exists, only the
//     references to absent owners, and to owners waiting for the
//     dependent's deletion, are patched away. If the only remaining owners
//     are deleting in the foreground, the dependent is deleted in the
//     foreground too. An owner being deleted with the foregroundDeletion
//     finalizer has its dependents queued; once none with
//     blockOwnerDeletion=true remains the finalizer is removed and the API
//     server deletes the owner.
//   - attempt to orphan: an owner being deleted with the orphan finalizer
//     has its ownerReference removed from every dependent, then the
//     finalizer removed.
//
// Guarantees:
//   - Deletes carry the object's uid as a precondition and ownerReference
//     patches carry it in metadata.uid, so an object deleted and recreated
//     under the same name is never deleted or changed by mistake.
//   - Owners are verified with live reads, never from the cache alone: a
//     dependent is only deleted when the API server confirms every owner
//     absent.
//   - A namespaced owner is looked for only in its dependent's namespace;
//     a reference to one in another namespace is treated as dangling and
//     reported with a Warning event (reason OwnerRefInvalidNamespace).
//     Cluster-scoped owners may be named from any namespace. A
//     cluster-scoped object naming a namespaced owner is reported and left
//     alone.
//   - Failed work is retried with per-item exponential backoff without a
//     limit; ownership cycles do not loop: each step is one bounded pass.
//   - Run returns only after every goroutine it started has exited.
package garbagecollector
