// Package controller is the toolkit a Kubernetes-style controller is built
// from: the worker loop that drains a rate-limited workqueue into a sync
// handler, expectations that keep a controller from acting on a stale cache,
// and the controller-ref manager that adopts and releases owned objects.
//
// # Worker loop
//
// A [Controller] owns a rate-limited queue of string keys and runs N workers
// over it. Each key is handed to the [SyncHandler] by exactly one worker at a
// time (the queue guarantees that a key being processed is not handed out
// again until Done). After the handler returns:
//
//   - nil: the key is forgotten (its backoff is reset);
//   - an error: the key is re-added with rate limiting while it has been
//     requeued fewer than MaxRetries (default 15) times, then the error is
//     logged, counted as dropped and the key forgotten;
//   - an error wrapped by [Terminal]: the key is logged and forgotten at once;
//   - a panic: it is recovered, logged with the key and counted, treated as
//     an error (so retried with backoff), and the worker carries on.
//
// Run waits for the caches to sync, starts the workers, and on cancellation
// shuts the queue down and returns only after every worker has exited; keys
// still queued then are left unprocessed rather than run with a cancelled
// context. The handler's context carries a logger (LoggerFrom) with the
// controller's name and the key.
//
// Informer handlers feed the queue through Enqueue, EnqueueAfter,
// EnqueueControllerOf (the owner of a dependent), EnqueueDeleted (which
// unwraps cache.DeletedFinalStateUnknown tombstones), or the ready-made
// EnqueueHandler and EnqueueOwnerHandler. Keys are cache.ObjectKey values,
// "namespace/name".
//
// Metrics go to a [Metrics] sink, NoopMetrics by default;
// [PrometheusMetrics] exports them under controller-runtime's names
// (controller_runtime_reconcile_total{controller,result},
// controller_runtime_reconcile_errors_total,
// controller_runtime_reconcile_time_seconds, ...).
//
// # Expectations
//
// [Expectations] and [UIDTrackingExpectations] record the creations and
// deletions a controller has issued for a key, so that it does not act again
// on that key until its informers have observed them or the record is older
// than the TTL (5 minutes by default, on an injected clock). Both are safe for
// concurrent use.
//
// # Controller references
//
// [RefManager] claims the objects a controller owns: it never touches an
// object controlled by another owner, releases owned objects that stopped
// matching, and adopts matching orphans only after a fresh read shows the
// owner still exists, unchanged and not being deleted. Adoption and release
// are strategic merge patches carrying the object's uid as a precondition,
// so an object deleted and recreated under the same name is never touched.
//
// Events are recorded by the record subpackage.
package controller
