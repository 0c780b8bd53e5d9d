// Package ttlafterfinished is the TTL-after-finished controller: it deletes
// a finished Job ttlSecondsAfterFinished after it finished, with the
// semantics of the Kubernetes controller of the same name.
//
// Guarantees:
//   - A Job is finished when its Complete or Failed condition is True; it
//     finished at that condition's lastTransitionTime. A Job with
//     ttlSecondsAfterFinished is looked at again, on the injected clock,
//     when its time is up, and never deleted earlier.
//   - Before deleting, the Job is read again from the API server, past the
//     cache, and its TTL checked once more (it may have been changed); the
//     delete carries that read's uid and resourceVersion as preconditions,
//     so a Job changed or replaced meanwhile is not deleted, and uses
//     background propagation, so the garbage collector removes its pods.
//
// The controller reads Jobs from a shared informers.Factory and does not
// start it.
package ttlafterfinished
