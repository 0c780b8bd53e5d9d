// Package configmapmirror is a sample controller built on kplane's
// controller toolkit: it mirrors every ConfigMap annotated
// configmap-mirror.kplane.io/enabled=true into a Secret of the same name and
// namespace, and keeps the Secret's data equal to the ConfigMap's.
//
// It shows the patterns a controller is made of:
//
//   - informers (pkg/cache) over a typed client (pkg/client) feed a
//     rate-limited queue (pkg/workqueue) of ConfigMap keys; a Secret's
//     events enqueue the ConfigMap of the same name, the one it mirrors;
//   - workers (pkg/controller.Controller) run a level-triggered,
//     idempotent sync for each key, retried with backoff;
//   - expectations keep a worker from creating a Secret twice before the
//     informer has seen the first;
//   - the controller-ref manager adopts an orphaned Secret that carries the
//     source label, and releases the Secret (removing its ownerReference)
//     when the ConfigMap stops asking for a mirror;
//   - a Secret of that name that someone else controls is left alone and
//     reported with a Warning event (pkg/controller/record), without retry;
//   - when the ConfigMap is deleted, the Secret it controlled is deleted
//     too, with a uid precondition.
//
// mirror_controller.go wires the parts together; mirror_sync.go is the
// reconcile logic.
package configmapmirror
