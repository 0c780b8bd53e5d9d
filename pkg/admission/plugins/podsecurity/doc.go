// Package podsecurity is the PodSecurity admission plugin, as Kubernetes'
// Pod Security Admission: it applies the Pod Security Standards a
// namespace's labels choose to the pods created and updated in it.
//
// Guarantees:
//   - Policy: the labels pod-security.kubernetes.io/enforce, audit and warn
//     choose a level (privileged, baseline or restricted; privileged when
//     unlabelled) and the -version labels a version ("latest" or "v1.x";
//     latest when unlabelled, and any version past the newest checks, v1.37,
//     evaluates as it). Warn follows a stricter enforce level unless it is
//     labelled itself.
//   - Checks: every baseline and restricted check of Kubernetes at each
//     version, with its exact messages and in its order (baseline checks by
//     name, then restricted ones; a restricted check replaces the baseline
//     one it tightens).
//   - Pods: on CREATE, and on UPDATE when an image changes or a container is
//     added (other fields cannot change on a stored pod, or are not
//     checked); not for the status, binding, eviction, exec, attach, log,
//     portforward and proxy subresources. A violation of enforce is 403
//     Forbidden: `pods "x" is forbidden: violates PodSecurity
//     "restricted:latest": <reason> (<detail>), ...`. Audit violations are
//     the audit annotation pod-security.kubernetes.io/audit-violations
//     (`would violate PodSecurity ...`), and pod-security.kubernetes.io/enforce-policy
//     records the enforced level; warn violations of an admitted request
//     are a warning `would violate PodSecurity "<level>:<version>": ...`.
//   - Pod templates (Deployments, ReplicaSets, StatefulSets, DaemonSets,
//     Jobs, CronJobs, ReplicationControllers, PodTemplates) are audited and
//     warned about, never refused.
//   - Namespaces: invalid labels are refused on CREATE, and on UPDATE
//     unless they were invalid the same way before (422 Invalid, with
//     Kubernetes' field errors); an update that tightens enforce warns
//     about the existing pods that would violate it, a line per distinct
//     set of reasons, checking at most MaxPodsToCheck pods (one per
//     controller first). Invalid labels of a namespace still evaluate its
//     pods (an invalid enforce level enforces restricted) and are recorded
//     as the audit annotation pod-security.kubernetes.io/error.
//   - Metrics: pod_security_evaluations_total, pod_security_errors_total
//     and pod_security_exemptions_total, with Kubernetes' names and labels,
//     when the Config has a registerer.
//   - Exemptions (usernames, runtime classes, namespaces of an admission
//     configuration file) are not configurable: nothing is exempt.
package podsecurity
