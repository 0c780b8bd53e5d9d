// Package resourcequota is the resource quota controller: it keeps the
// status of every ResourceQuota, with the semantics of the usage half of
// the Kubernetes controller of the same name. Enforcing quotas on create
// and update is admission's work, not this package's.
//
// Guarantees:
//   - status.hard mirrors spec.hard; status.used has an entry for every
//     resource of spec.hard that is evaluated, and keeps the old value of one
//     that is not (a name no evaluator knows).
//   - Pods: pods and count/pods count the pods that have not finished
//     (phase Succeeded or Failed) and are not stuck terminating past their
//     grace period; requests.<r> and limits.<r> (cpu, memory,
//     ephemeral-storage, huge pages and extended resources; bare cpu and
//     memory mean requests) sum their effective requests and limits: the
//     pod-level resources where set, else the larger of the containers' sum
//     with the sidecars and the peak of an init container, plus overhead.
//   - Scopes: Terminating, NotTerminating, BestEffort, NotBestEffort,
//     CrossNamespacePodAffinity and PriorityClass (In, NotIn, Exists,
//     DoesNotExist), from spec.scopes and spec.scopeSelector, narrow the
//     pods counted; a quota with scopes counts no other objects (their
//     entries are 0). The VolumeAttributesClass scope of claims is not
//     evaluated: such quotas count no claims.
//   - Services: services, services.loadbalancers and services.nodeports (a
//     node port per port of NodePort and LoadBalancer services; for a
//     LoadBalancer that allocates none, the ports given one explicitly).
//   - Claims: persistentvolumeclaims and requests.storage (the larger of a
//     claim's request and its allocated storage), in total and per storage
//     class (<class>.storageclass.storage.k8s.io/...).
//   - Object counts: configmaps, secrets, replicationcontrollers,
//     resourcequotas and count/<resource>[.<group>] for every served
//     resource. Config maps, secrets, replication controllers, quotas,
//     Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs and CronJobs
//     are counted from the shared informers; any other resource (custom
//     resources included) with a metadata list through the API, found with
//     the RESTMapper; a count of a resource the server does not serve is
//     left out.
//   - Recalculation: a quota is recalculated when it is created or its spec
//     changes, when an object counted from an informer is added, changed or
//     deleted in its namespace (for pods, only changes that can change what
//     they are charged), and for every quota each ResyncPeriod (default 5
//     minutes, on the injected clock). Changes of resources counted through
//     the API are seen on the next recalculation.
//   - Status is written through the status subresource only when hard or
//     used changed.
//
// The controller reads from a shared informers.Factory and does not start
// it. Run waits for the caches, runs the workers and the resync until its
// context ends and returns once they have exited.
package resourcequota
