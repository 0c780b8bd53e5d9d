// Package rootcacertpublisher is the root CA certificate publisher: it
// keeps a ConfigMap named kube-root-ca.crt in every namespace holding the
// API server's CA bundle under the key ca.crt, as Kubernetes'
// root-ca-cert-publisher does, so that pods can verify the API server.
//
// Guarantees:
//   - Every namespace gets the ConfigMap, with the kubernetes.io/description
//     annotation Kubernetes sets (Description).
//   - The ConfigMap is kept as it should be: its data is set back to
//     exactly {ca.crt: the bundle} and the annotation restored when edited,
//     and it is made again when deleted. Its other labels and annotations
//     are left as they are.
//   - Creates refused because the namespace is gone or terminating are
//     dropped, not retried.
//
// New refuses an empty Config.RootCA: with no CA bundle there is nothing
// to publish, and the controller manager does not start the publisher
// then. The controller reads namespaces and ConfigMaps from a shared
// informers.Factory and does not start it. Run waits for the caches, runs
// the workers until its context ends and returns once they have exited.
package rootcacertpublisher
