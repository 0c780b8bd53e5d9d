// Package bootstrap is the RBAC policy every kplane cluster starts with, as
// kube-apiserver installs it: the user-facing ClusterRoles (cluster-admin,
// admin, edit, view and their aggregated parts), the discovery and
// health roles every client needs, the roles of the components
// (system:node, system:kube-scheduler, system:kube-controller-manager)
// and one system:controller:<name> role per controller kplane runs (and
// for a few more of kube-controller-manager's), each
// bound to the ServiceAccount of that name in kube-system. It also holds
// the reconciliation rules the API server applies at start.
//
// Guarantees:
//   - The objects are new on every call: callers may change them.
//   - Every object carries the labels and annotations Kubernetes puts on
//     its defaults (kubernetes.io/bootstrapping=rbac-defaults,
//     rbac.authorization.kubernetes.io/autoupdate=true).
//   - Reconciliation only adds: missing rules, aggregation selectors,
//     subjects, labels and annotations; it never removes what users added,
//     and it leaves alone objects annotated autoupdate=false.
//
// One difference from Kubernetes is deliberate: kplane has no Node
// authorizer, so the system:node ClusterRoleBinding binds the group
// system:nodes (Kubernetes leaves it without subjects).
package bootstrap
