// Package priority is the Priority admission plugin, as Kubernetes':
//
//   - A pod created with spec.priorityClassName gets spec.priority and
//     spec.preemptionPolicy from that scheduling.k8s.io/v1 PriorityClass;
//     a class that does not exist is 403 Forbidden
//     (`no PriorityClass with name <n> was found`).
//   - A pod created without one gets the globalDefault class (its name,
//     value and policy; the lowest value if a race left several), or
//     priority 0 and PreemptLowerPriority when there is none.
//   - A pod giving a spec.priority or spec.preemptionPolicy other than the
//     one computed is refused with Kubernetes' message.
//   - A pod update that leaves spec.priority or spec.preemptionPolicy out
//     keeps the stored ones (validation forbids changing them).
//   - Creating a second globalDefault PriorityClass, or marking one the
//     default while another is, is refused.
//
// Every namespace may use the system classes (system-node-critical,
// system-cluster-critical): Kubernetes has not limited them to
// kube-system since 1.17 (a ResourceQuota with a priority class scope
// does that when wanted). Refusing to delete the system classes and the
// value and name rules of PriorityClasses are the registry's, not this
// plugin's, as in Kubernetes.
//
// PriorityClasses are read from the admission.Source's cache, and a class
// the cache lacks from the store (a class created an instant before the
// pod). The plugin keeps no state and is safe for concurrent use.
package priority
