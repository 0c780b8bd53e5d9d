// Package tables converts API objects into the metav1.Table that
// kube-apiserver returns for "Accept: application/json;as=Table;v=v1;g=meta.k8s.io",
// the form `kubectl get` prints.
//
// The columns and cells follow Kubernetes' printers for the kinds kplane
// serves: pods (NAME READY STATUS RESTARTS AGE, and the wide IP, NODE,
// NOMINATED NODE, READINESS GATES), deployments, replica sets, namespaces,
// nodes, events, config maps, secrets, leases and the scale subresource. Every other object gets
// the default Name and Created At columns. As kube-apiserver does, rows
// always carry the wide (priority 1) cells; clients hide them unless asked.
// Cells are strings, int64 counts and the human durations of
// k8s.io/apimachinery/pkg/util/duration ("45s", "3m20s", "2d4h").
//
// Conversion is a pure function of the object and the time passed in: it
// reads no clock, keeps no state, and is safe for concurrent use.
package tables
