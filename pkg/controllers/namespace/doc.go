// Package namespace is the namespace controller: it empties namespaces that
// are being deleted and then releases them, with the semantics of the
// Kubernetes controller of the same name.
//
// Deleting a namespace only marks it Terminating; its "kubernetes" spec
// finalizer keeps it until this controller has removed its content. For
// every namespace with a deletionTimestamp that still holds that
// finalizer, a sync (Config.SyncDelay, 5 s by default, after the event that
// showed the deletion, as in Kubernetes):
//   - deletes the content of every namespaced resource of Config.Resources
//     in it, with one deletecollection per resource (or a list and a delete
//     per object where deletecollection is not served), with the default
//     grace period: objects with finalizers or a graceful deletion are
//     marked, not forced away;
//   - lists what remains and writes the namespace's status conditions, as
//     Kubernetes does: NamespaceDeletionDiscoveryFailure,
//     NamespaceDeletionGroupVersionParsingFailure,
//     NamespaceDeletionContentFailure, NamespaceContentRemaining and
//     NamespaceFinalizersRemaining (through the status subresource, only
//     when one changed);
//   - when content remains, looks again after Config.RecheckInterval; when
//     a deletion failed, retries with the worker loop's backoff;
//   - when nothing remains, removes "kubernetes" from spec.finalizers through
//     the namespaces/{name}/finalize subresource; the API server deletes the
//     namespace once no finalizer is left.
//
// Syncs are idempotent and level-triggered: a namespace is read from the
// server, not the cache, before anything is deleted, and conflicts are
// retried. The controller never touches namespaces that are not being
// deleted.
package namespace
