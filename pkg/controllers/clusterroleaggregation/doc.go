// Package clusterroleaggregation is the ClusterRole aggregation controller:
// it sets the rules of every ClusterRole that has an aggregationRule to the
// rules of the ClusterRoles its selectors match, as Kubernetes'
// clusterrole-aggregation controller does.
//
// Guarantees:
//   - The aggregated rules are the union of the matched roles' rules,
//     without duplicates, in a stable order: selector by selector, the
//     matched roles by name, each role's rules in its order. A role never
//     aggregates its own rules.
//   - Writes only on change: a ClusterRole whose rules already are the
//     union is not written, so the controller settles.
//   - Follows every change: any ClusterRole added, changed or deleted
//     makes every aggregating ClusterRole be looked at again, since any of
//     them may select it.
//   - Conflicts (someone else wrote the role meanwhile) are retried with
//     the queue's backoff, from the informer's newer state.
//
// The controller reads ClusterRoles from a shared informers.Factory and does
// not start it. Run waits for the cache, runs the workers until its context
// ends and returns once they have exited.
package clusterroleaggregation
