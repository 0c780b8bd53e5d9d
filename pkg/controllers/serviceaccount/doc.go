// Package serviceaccount is the ServiceAccounts controller: it keeps a
// "default" ServiceAccount (Config.ServiceAccounts to change the set) in
// every active namespace, as Kubernetes' serviceaccount controller does.
//
// Guarantees:
//   - Every namespace in phase Active has the ServiceAccounts named by
//     Config.ServiceAccounts; one deleted is made again.
//   - Terminating namespaces get none (a create the API server refuses
//     because the namespace is terminating is dropped, not retried).
//   - Existing ServiceAccounts are never changed: the controller only
//     creates the missing ones.
//
// The controller reads namespaces and ServiceAccounts from a shared
// informers.Factory and does not start it. Run waits for the caches, runs
// the workers until its context ends and returns once they have exited.
package serviceaccount
