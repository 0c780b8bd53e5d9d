// Package serviceaccount is the ServiceAccount admission plugin, as
// Kubernetes':
//
//   - A pod created without spec.serviceAccountName gets the deprecated
//     spec.serviceAccount's, or else "default"; spec.serviceAccount is set
//     to the same name, as Kubernetes' v1 pods always show it.
//   - The ServiceAccount must exist: it is read from the admission.Source's
//     cache and, when the cache lacks it, from the store, up to ten times
//     100-200ms apart for "default" (which the ServiceAccount controller
//     creates shortly after its namespace) and once for any other name.
//     Otherwise the pod is refused, 403 Forbidden:
//     `error looking up service account <ns>/<name>: serviceaccount "<name>" not found`.
//   - Unless automountServiceAccountToken is false on the pod, or unset on
//     the pod and false on the ServiceAccount, the pod gets a projected
//     volume kube-api-access-<5 random characters> (a bound token expiring
//     after 3607 seconds at token, the kube-root-ca.crt ConfigMap's ca.crt,
//     the pod's namespace at namespace; defaultMode 0644), mounted read-only
//     at /var/run/secrets/kubernetes.io/serviceaccount in every init
//     container and container that has no mount at that path. Ephemeral
//     containers are not given the mount. A kube-api-access- volume the pod
//     already has is reused.
//   - A pod without imagePullSecrets gets the ServiceAccount's.
//   - A ServiceAccount annotated kubernetes.io/enforce-mountable-secrets=true
//     limits the secrets the pod's volumes, env and envFrom refer to to
//     its secrets, and its imagePullSecrets to the ServiceAccount's; an
//     update of the ephemeralcontainers subresource is checked the same
//     way for the ephemeral containers.
//   - Mirror pods (annotated kubernetes.io/config.mirror, created by
//     kubelets) are never changed and may refer to no ServiceAccount, no
//     secret and no ServiceAccountToken projection.
//
// Other pod updates are not looked at: the fields are immutable. The plugin
// keeps no state besides its configuration and is safe for concurrent use;
// Admit and Validate may block while they retry the lookup of "default",
// until ctx is done.
package serviceaccount
