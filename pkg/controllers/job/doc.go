// Package job is the Job controller: it runs a Job's pods to completion
// and reports what they did in the Job's status, with the semantics of the
// Kubernetes controller of the same name.
//
// Guarantees:
//   - Pods: a NonIndexed Job runs parallelism pods at a time (never more
//     than the completions still missing); an Indexed Job runs one pod per
//     index that has neither succeeded nor failed, with the index in the
//     batch.kubernetes.io/job-completion-index annotation and label, the
//     JOB_COMPLETION_INDEX environment variable and the hostname
//     <job>-<index>. Duplicate and out-of-range pods are deleted. Pods are
//     created in slow-start batches (1, 2, 4, ...), at most Burst per sync.
//   - Never on a stale cache: no pod is created or deleted for a Job until
//     the informer has observed the previous creations and deletions.
//   - Every finished pod is counted exactly once: created pods carry the
//     batch.kubernetes.io/job-tracking finalizer; a finished pod's uid is
//     written into status.uncountedTerminatedPods before its finalizer is
//     removed, and moved into status.succeeded or status.failed after, so
//     a controller stopped at any point (and a new one on the same server)
//     neither loses nor doubles a pod. Pods of deleted or finished Jobs
//     lose the finalizer.
//   - Failures: a pod counts as failed when Failed, or when deleted before
//     it succeeded unless pods are replaced only once Failed
//     (podReplacementPolicy Failed, or a podFailurePolicy) or the Job is
//     suspended. The podFailurePolicy rules (exit codes, pod conditions;
//     FailJob, Ignore, Count, FailIndex) are applied to Failed pods.
//     Failed pods are replaced after a backoff of PodFailureBackoff (10s),
//     doubled for each failure since the last success, capped at
//     MaxPodFailureBackoff (6 min), measured on the injected clock from the
//     pods the Job still has; with backoffLimitPerIndex, per index.
//   - Conditions as Kubernetes sets them: FailureTarget (reasons
//     BackoffLimitExceeded, DeadlineExceeded, PodFailurePolicy,
//     MaxFailedIndexesExceeded, FailedIndexes) or SuccessCriteriaMet
//     (CompletionsReached, SuccessPolicy) first, then the remaining active
//     pods are deleted, and once none runs or terminates Failed or Complete
//     (with completionTime) with the same reason. Suspended (JobSuspended,
//     JobResumed) follows spec.suspend: suspending deletes the active pods
//     and clears startTime, resuming sets it anew.
//   - Status: active, ready, terminating, succeeded, failed,
//     completedIndexes, failedIndexes, startTime, written through the status
//     subresource only when something changed.
//   - Events: SuccessfulCreate, FailedCreate, SuccessfulDelete,
//     FailedDelete, Completed, Suspended, Resumed, and a Warning with the
//     failure reason when the Job fails.
//   - Jobs whose spec.managedBy names another controller are left alone.
//
// The controller reads Jobs and pods from a shared informers.Factory and
// does not start it. Run waits for the two caches, runs the workers until
// its context ends and returns once they have exited.
package job
