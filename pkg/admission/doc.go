// Package admission is the API server's admission chain, as Kubernetes'
// k8s.io/apiserver/pkg/admission: after a request is authenticated and
// authorized and its object decoded, mutating plugins may change the
// object, the resource's strategy validates it, and validating plugins may
// refuse it; only then is it stored.
//
// A plugin implements MutationInterface, ValidationInterface or both, and
// says with Handles which operations it looks at. The server builds one
// Chain from the plugins enabled (Kubernetes' names and order, see
// OrderedPlugins and DefaultOnPlugins) and runs it on every write: Admit
// on CREATE and UPDATE (and DELETE and CONNECT, which have no object to
// change), Validate on all four. Plugins read the cluster through a
// Source the server provides, which follows the stored objects in memory.
//
// The subpackages are the plugins: webhook (MutatingAdmissionWebhook and
// ValidatingAdmissionWebhook), policy (ValidatingAdmissionPolicy and
// MutatingAdmissionPolicy) and the built-in ones under plugins/.
package admission
