package leaderelection

import (
	"context"
	"time"
)

// Record is the content of a leader lock: who holds it and for how long.
// It mirrors the spec of a coordination.k8s.io/v1 Lease.
type Record struct {
	// HolderIdentity is the identity of the leader; empty when the lock was
	// released and nobody holds it.
	HolderIdentity string
	// LeaseDurationSeconds is how long, after they last saw the record
	// change, other candidates wait before they may take the lock over.
	LeaseDurationSeconds int
	// AcquireTime is when the current holder acquired the lock, on the
	// holder's clock. Informational only: no decision reads it.
	AcquireTime time.Time
	// RenewTime is when the holder last renewed the lock, on the holder's
	// clock. Informational only: candidates never compare it with their own
	// clock, so clock offsets between machines do not matter.
	RenewTime time.Time
	// LeaderTransitions counts how many times the lock changed holder.
	LeaderTransitions int
}

// Lock stores a leader Record with optimistic concurrency. Every stored
// record has an opaque version that changes on every write; Update succeeds
// only if the stored version is still the one given, so of two candidates
// writing on top of the same version exactly one wins and the other gets a
// Conflict. Implementations must be safe for concurrent use.
type Lock interface {
	// Get returns the stored record and its version, or an error for which
	// apierrors.IsNotFound is true when no record exists yet.
	Get(ctx context.Context) (Record, string, error)
	// Create stores r if no record exists and returns its version; it fails
	// (apierrors.IsAlreadyExists) if one does.
	Create(ctx context.Context, r Record) (string, error)
	// Update replaces the record if its version is still version and returns
	// the new version; it fails with apierrors.IsConflict if the record has
	// been written since.
	Update(ctx context.Context, r Record, version string) (string, error)
	// Identity is the identity this candidate writes as HolderIdentity. It
	// must be unique among the candidates competing for the lock.
	Identity() string
	// Describe names the lock for logs, such as "kube-system/my-controller".
	Describe() string
}

// Callbacks are the functions an Elector calls as leadership changes.
type Callbacks struct {
	// OnStartedLeading is called in its own goroutine when this candidate
	// becomes the leader. Its context is cancelled as soon as leadership is
	// lost or Run's context is cancelled; it must then stop acting as the
	// leader and return promptly, and at the latest within
	// LeaseDuration-RenewDeadline, after which another candidate may lead.
	// Run does not return before it has. Required.
	OnStartedLeading func(ctx context.Context)
	// OnStoppedLeading is called by Run after leadership ended and
	// OnStartedLeading returned (and, with ReleaseOnCancel, after the lock
	// was released). It is not called if this candidate never led during
	// the Run. Optional.
	OnStoppedLeading func()
	// OnNewLeader is called with the identity of each new holder observed,
	// this candidate's own included. Calls come from one goroutine, in
	// order, never concurrently; if a call is still running when the holder
	// changes more than once, only the latest holder is reported. A released
	// lock (no holder) is not reported, but the next holder is, even if it
	// is the same identity as before. Optional.
	OnNewLeader func(identity string)
}

// MetricsProvider creates the leader metric of a named elector. The
// elector calls it once, in New.
type MetricsProvider interface {
	NewLeaderMetric(name string) LeaderMetric
}

// LeaderMetric records whether an elector leads. It must be cheap and
// safe for concurrent use.
type LeaderMetric interface {
	// On is called when the elector starts leading.
	On()
	// Off is called when it stops.
	Off()
}
