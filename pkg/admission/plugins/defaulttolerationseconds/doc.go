// Package defaulttolerationseconds is the DefaultTolerationSeconds
// admission plugin: every pod created or updated that does not already
// tolerate the node.kubernetes.io/not-ready and
// node.kubernetes.io/unreachable NoExecute taints gets a toleration of each
// for a bounded time (300 seconds unless configured), so that the pods of a
// node that stops answering are evicted after that time rather than never.
//
// A toleration counts as tolerating a taint when its key is the taint's
// or empty (a wildcard) and its effect is NoExecute or empty, as in
// Kubernetes. Subresources are ignored. The plugin reads nothing from the
// cluster and is safe for concurrent use.
package defaulttolerationseconds
