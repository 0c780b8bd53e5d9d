// Package history keeps the revision history of a controller's pod
// template in ControllerRevisions, with the semantics of Kubernetes'
// controller history helpers: StatefulSets and DaemonSets store each
// version of their template as a ControllerRevision they own, so that
// `kubectl rollout history` can list them and `kubectl rollout undo` can
// write one back.
//
// Guarantees:
//   - Names are stable: a revision is named <parent>-<hash>, the hash being
//     FNV-32 over the revision's data and the parent's collision count, as
//     Kubernetes computes it; the hash is also the
//     controller.kubernetes.io/hash label.
//   - Collisions are resolved, never ignored: when a create finds a
//     revision of that name holding other data, the collision count is
//     bumped and the create retried under the next name. The caller keeps
//     the count (in its status) so the next name is found again.
//   - Ownership: revisions are created with a controller reference to the
//     parent; List returns only the revisions the parent controls and the
//     orphans its selector matches; adoption and release are strategic merge
//     patches guarded by the revision's uid.
//   - Order: SortControllerRevisions orders by revision number, then
//     creation time, then name, so that ties are broken the same way
//     everywhere.
//
// The package is general: the parent is any metav1.Object with its
// GroupVersionKind. A History reads revisions from a shared informer's
// lister and writes them through a RevisionClient; it starts no
// goroutines and is safe for concurrent use.
package history
