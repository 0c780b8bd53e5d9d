// Package leaderelection elects one leader among several candidates, for
// controllers that must run in one replica at a time, using a
// coordination.k8s.io/v1 Lease as the lock.
//
// Every candidate runs an Elector over a Lock (LeaseLock for a Lease in an
// API server). A candidate acquires the lock when it is free, when its
// holder released it, or when nobody has changed it for the lease duration
// recorded in it; the leader then renews it every RetryPeriod. Writes are
// conditional on the lock's version (the Lease's resourceVersion), so of
// candidates racing for it exactly one wins and the others get a Conflict.
//
//	lock, _ := leaderelection.NewLeaseLock(leaderelection.LeaseLockConfig{
//		Client: c, Namespace: "kube-system", Name: "my-controller", Identity: hostname})
//	e, _ := leaderelection.New(leaderelection.Config{Lock: lock, ReleaseOnCancel: true,
//		Callbacks: leaderelection.Callbacks{OnStartedLeading: runControllers}})
//	err := e.Run(ctx)
//
// Guarantees:
//   - At most one leader: a candidate's OnStartedLeading context is
//     cancelled no later than RenewDeadline after the start of its last
//     successful renewal (also while a renewal is still in flight, and at
//     once when it sees another holder in the lock), while no other
//     candidate can acquire the lock before LeaseDuration has passed since
//     that renewal was written. So two OnStartedLeading contexts are never
//     live at once, and a former leader has LeaseDuration-RenewDeadline
//     (5s by default) to stop acting after its context is cancelled.
//     Identities must be unique, one process per identity.
//   - Release: with ReleaseOnCancel, a leader whose Run context is
//     cancelled waits for OnStartedLeading to return, then writes a record
//     with no holder and a one-second duration, so another candidate takes
//     over at its next attempt rather than after LeaseDuration. The write is
//     conditional: it cannot erase a newer holder.
//   - Orderly shutdown: Run returns only after OnStartedLeading, the
//     OnNewLeader goroutine and every timer it started are done, and calls
//     OnStoppedLeading last.
//   - Compatibility: LeaseLock writes the Lease fields the way Kubernetes'
//     own electors do (holderIdentity, leaseDurationSeconds, acquireTime,
//     renewTime, leaseTransitions), so kplane and client-go candidates
//     can compete for the same Lease.
//
// Clock assumption: expiry is judged by each candidate on its own clock,
// from the moment it saw the lock record last change, never from the
// renewTime written in the record. Clocks of different machines may
// therefore be set to any time; what must hold is that they run at about
// the same rate: over one LeaseDuration they may drift apart by less than
// LeaseDuration-RenewDeadline minus the time a leader needs to stop. All
// durations are measured on Config.Clock, so tests use a fake clock or
// testing/synctest.
//
// Compared with client-go's elector, the renew deadline is counted from
// the start of the last successful renewal rather than from the start of
// the current round of retries, a leader steps down as soon as it reads
// another holder, and OnStoppedLeading is not called by a Run that never
// led.
//
// Leadership is exported as leader_election_master_status{name} through
// Config.Metrics (PrometheusMetrics), and HealthCheck turns Elector.Check
// into a health endpoint that fails when a leader cannot renew.
package leaderelection
