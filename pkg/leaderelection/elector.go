package leaderelection

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// ErrLeadershipLost is returned by Run when the elector stopped leading
// while its context was still live: the lease could not be renewed within
// RenewDeadline, or another candidate holds it.
var ErrLeadershipLost = errors.New("leaderelection: leadership lost")

// Elector runs one candidate of a leader election. Its methods are safe for
// concurrent use; Run may be called again after it returned, but not twice
// at once.
type Elector struct {
	cfg       Config
	id        string
	leaseSecs int
	metric    LeaderMetric

	running atomic.Bool // a Run is in progress

	mu sync.Mutex
	// observed is the last record this elector read or wrote, version its
	// version, and observedTime the local clock reading just after the
	// record was last seen to change. Expiry of another holder's lease is
	// judged from observedTime only, never from the record's timestamps.
	observed     Record
	version      string
	haveObserved bool
	observedTime time.Time
	// reported is the holder last given to OnNewLeader ("" after a release).
	reported string
	notify   *notifier // nil unless a Run with OnNewLeader is in progress
	// leadDone is the Done channel of the running OnStartedLeading's
	// context, nil when not leading. renewedAt is the start of the last
	// successful acquire or renew attempt; the leader gives up at
	// renewedAt+RenewDeadline. callbackRunning is true from the call of
	// OnStartedLeading until it returns.
	leadDone        <-chan struct{}
	renewedAt       time.Time
	callbackRunning bool
}

// New returns an Elector for cfg. It starts nothing: call Run.
func New(cfg Config) (*Elector, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Elector{
		cfg:       cfg,
		id:        cfg.Lock.Identity(),
		leaseSecs: int(cfg.LeaseDuration / time.Second),
		metric:    cfg.Metrics.NewLeaderMetric(cfg.Name),
	}, nil
}

// IsLeader reports whether this candidate leads now: it has acquired the
// lock and its OnStartedLeading context is not yet cancelled.
func (e *Elector) IsLeader() bool {
	e.mu.Lock()
	done := e.leadDone
	e.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// GetLeader returns the holder of the lock as last observed by this
// candidate, "" if none was observed or the lock was released.
func (e *Elector) GetLeader() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.observed.HolderIdentity
}

// Check returns an error if OnStartedLeading is running but the lease was
// last renewed more than RetryPeriod+maxOverdue ago: the elector cannot
// renew, or leadership ended and the callback ignores its cancelled
// context. Either way the process should be restarted. It returns nil
// when not leading.
func (e *Elector) Check(maxOverdue time.Duration) error {
	e.mu.Lock()
	running, renewed := e.callbackRunning, e.renewedAt
	e.mu.Unlock()
	if !running {
		return nil
	}
	if since := e.cfg.Clock.Since(renewed); since > e.cfg.RetryPeriod+maxOverdue {
		return fmt.Errorf("leaderelection: %s: leading, but the lease was last renewed %v ago (more than retry period %v + %v)",
			e.cfg.Name, since, e.cfg.RetryPeriod, maxOverdue)
	}
	return nil
}

// Run campaigns for leadership until ctx is cancelled or leadership is
// lost. Once it acquires the lock it calls OnStartedLeading in a new
// goroutine and renews the lock every RetryPeriod. It stops leading when
// ctx is cancelled, when no renewal succeeded for RenewDeadline (counted
// from the start of the last successful attempt), or as soon as it sees
// another holder in the lock; then it cancels OnStartedLeading's context,
// waits for it to return, releases the lock if ReleaseOnCancel is set and
// ctx was cancelled, and calls OnStoppedLeading.
//
// An acquisition whose attempt took longer than RenewDeadline counts as
// lost at once: OnStartedLeading is not called.
//
// Run blocks, and returns only after every goroutine it started has
// exited. It returns nil when ctx was cancelled, ErrLeadershipLost when
// leadership was lost while ctx was live, and an error if another Run of
// this Elector is in progress.
func (e *Elector) Run(ctx context.Context) error {
	if !e.running.CompareAndSwap(false, true) {
		return fmt.Errorf("leaderelection: %s: Run is already in progress", e.cfg.Name)
	}
	defer e.running.Store(false)

	if f := e.cfg.Callbacks.OnNewLeader; f != nil {
		n := newNotifier()
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() { n.run(stop, f) })
		e.mu.Lock()
		e.notify = n
		e.mu.Unlock()
		defer func() {
			e.mu.Lock()
			e.notify = nil
			e.mu.Unlock()
			close(stop)
			wg.Wait()
		}()
	}

	renewedAt, ok := e.acquire(ctx)
	if !ok {
		return nil
	}
	return e.lead(ctx, renewedAt)
}

// acquire tries to acquire the lock every RetryPeriod (with jitter) until
// it succeeds, returning the start time of the successful attempt, or ctx
// is cancelled.
func (e *Elector) acquire(ctx context.Context) (time.Time, bool) {
	log := e.log()
	log.Info("attempting to acquire leader lease")
	for ctx.Err() == nil {
		start := e.cfg.Clock.Now()
		actx, cancel := e.withTimeout(ctx, e.cfg.RenewDeadline)
		ok, err := e.tryAcquireOrRenew(actx, start, false)
		cancel()
		if ok {
			log.Info("acquired leader lease")
			return start, true
		}
		if err != nil && ctx.Err() == nil {
			log.Info("failed to acquire leader lease", "err", err)
		}
		wait := e.cfg.RetryPeriod + time.Duration(rand.Float64()*JitterFactor*float64(e.cfg.RetryPeriod))
		if !e.sleep(ctx, wait) {
			break
		}
	}
	return time.Time{}, false
}

// lead runs OnStartedLeading and renews the lock until leadership ends,
// then steps down.
func (e *Elector) lead(ctx context.Context, renewedAt time.Time) error {
	log := e.log()
	clk := e.cfg.Clock
	leadCtx, cancelLead := context.WithCancel(ctx)
	defer cancelLead()
	// The deadline timer cancels leadCtx at renewedAt+RenewDeadline, even
	// while a renewal request is in flight (requests use leadCtx too).
	deadline := e.afterFunc(renewedAt.Add(e.cfg.RenewDeadline).Sub(clk.Now()), cancelLead)

	// An acquisition that took longer than RenewDeadline is already lost:
	// OnStartedLeading is not called with a dead context.
	started := leadCtx.Err() == nil
	var wg sync.WaitGroup
	if started {
		e.mu.Lock()
		e.leadDone = leadCtx.Done()
		e.renewedAt = renewedAt
		e.callbackRunning = true
		e.mu.Unlock()
		e.metric.On()
		wg.Go(func() {
			defer func() {
				e.mu.Lock()
				e.callbackRunning = false
				e.mu.Unlock()
			}()
			e.cfg.Callbacks.OnStartedLeading(leadCtx)
		})
	}

	for e.sleep(leadCtx, e.cfg.RetryPeriod) {
		start := clk.Now()
		ok, err := e.tryAcquireOrRenew(leadCtx, start, true)
		if leadCtx.Err() != nil {
			break
		}
		if ok {
			deadline.Stop()
			deadline = e.afterFunc(start.Add(e.cfg.RenewDeadline).Sub(clk.Now()), cancelLead)
			e.mu.Lock()
			e.renewedAt = start
			e.mu.Unlock()
			continue
		}
		if holder := e.GetLeader(); holder != e.id {
			log.Info("leader lease taken by another candidate", "holder", holder)
			break
		}
		log.Info("failed to renew leader lease", "err", err)
	}

	lost := ctx.Err() == nil
	if lost && leadCtx.Err() != nil && e.GetLeader() == e.id {
		log.Info("failed to renew leader lease within the renew deadline", "renewDeadline", e.cfg.RenewDeadline)
	}
	cancelLead()
	deadline.Stop()
	e.mu.Lock()
	e.leadDone = nil
	e.mu.Unlock()
	if started {
		e.metric.Off()
	}
	wg.Wait()

	if e.cfg.ReleaseOnCancel && !lost {
		e.release(ctx)
	}
	log.Info("stopped leading", "lost", lost)
	if f := e.cfg.Callbacks.OnStoppedLeading; f != nil && started {
		f()
	}
	if lost {
		return ErrLeadershipLost
	}
	return nil
}

// tryAcquireOrRenew makes one attempt to acquire or, when leading, renew
// the lock. now is the attempt's start. It reports whether this candidate
// holds the lock afterwards; the error says why an attempt failed, and is
// nil when the lock is simply held by another candidate.
func (e *Elector) tryAcquireOrRenew(ctx context.Context, now time.Time, leading bool) (bool, error) {
	lock := e.cfg.Lock
	desired := Record{
		HolderIdentity:       e.id,
		LeaseDurationSeconds: e.leaseSecs,
		AcquireTime:          now,
		RenewTime:            now,
	}

	// A leader writes on top of the version it last wrote: one request in
	// the common case. If that fails, read the lock as everyone else does.
	e.mu.Lock()
	obs, version, have := e.observed, e.version, e.haveObserved
	e.mu.Unlock()
	if leading && have && obs.HolderIdentity == e.id {
		desired.AcquireTime = obs.AcquireTime
		desired.LeaderTransitions = obs.LeaderTransitions
		v, err := lock.Update(ctx, desired, version)
		if err == nil {
			e.observe(desired, v)
			return true, nil
		}
		if ctx.Err() != nil {
			return false, fmt.Errorf("renew lock: %w", err)
		}
	}

	rec, version, err := lock.Get(ctx)
	switch {
	case apierrors.IsNotFound(err):
		v, err := lock.Create(ctx, desired)
		if err != nil {
			return false, fmt.Errorf("create lock: %w", err)
		}
		e.observe(desired, v)
		return true, nil
	case err != nil:
		return false, fmt.Errorf("get lock: %w", err)
	}

	observedTime := e.observe(rec, version)
	expiry := observedTime.Add(time.Duration(rec.LeaseDurationSeconds) * time.Second)
	if rec.HolderIdentity != "" && rec.HolderIdentity != e.id && expiry.After(now) {
		return false, nil
	}
	if rec.HolderIdentity == e.id {
		desired.AcquireTime = rec.AcquireTime
		desired.LeaderTransitions = rec.LeaderTransitions
	} else {
		desired.LeaderTransitions = rec.LeaderTransitions + 1
	}
	v, err := lock.Update(ctx, desired, version)
	if err != nil {
		return false, fmt.Errorf("update lock: %w", err)
	}
	e.observe(desired, v)
	return true, nil
}

// release writes a record with no holder on top of this candidate's last
// write, so others may acquire the lock at once. The write is conditional
// on the version: if anyone wrote since, it fails and changes nothing.
func (e *Elector) release(ctx context.Context) {
	e.mu.Lock()
	obs, version := e.observed, e.version
	e.mu.Unlock()
	if obs.HolderIdentity != e.id {
		return
	}
	rctx, cancel := e.withTimeout(context.WithoutCancel(ctx), e.cfg.RenewDeadline)
	defer cancel()
	now := e.cfg.Clock.Now()
	rec := Record{
		LeaseDurationSeconds: 1,
		AcquireTime:          now,
		RenewTime:            now,
		LeaderTransitions:    obs.LeaderTransitions,
	}
	v, err := e.cfg.Lock.Update(rctx, rec, version)
	if err != nil {
		e.log().Info("failed to release leader lease", "err", err)
		return
	}
	e.observe(rec, v)
	e.log().Info("released leader lease")
}

// observe records rec, read or written at version, and returns the local
// time at which the record was last seen to change.
func (e *Elector) observe(rec Record, version string) time.Time {
	now := e.cfg.Clock.Now() // read before taking e.mu: see afterFunc
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.haveObserved && version == e.version {
		return e.observedTime
	}
	e.observed, e.version, e.haveObserved, e.observedTime = rec, version, true, now
	if rec.HolderIdentity != e.reported {
		e.reported = rec.HolderIdentity
		if rec.HolderIdentity != "" && e.notify != nil {
			e.notify.post(rec.HolderIdentity)
		}
	}
	return now
}

// sleep waits for d on the clock; it returns false if ctx ended first.
func (e *Elector) sleep(ctx context.Context, d time.Duration) bool {
	if ctx.Err() != nil {
		return false
	}
	if d <= 0 {
		return true
	}
	t := e.cfg.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// afterFunc calls f after d on the clock, at once if d is not positive.
// A fake clock calls f while holding its own lock, so f must not use the
// clock, and the elector never uses the clock while holding e.mu.
func (e *Elector) afterFunc(d time.Duration, f func()) stopper {
	if d <= 0 {
		f()
		return noStop{}
	}
	return e.cfg.Clock.AfterFunc(d, f)
}

// withTimeout is context.WithTimeout measured on the elector's clock.
func (e *Elector) withTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	t := e.afterFunc(d, cancel)
	return ctx, func() {
		t.Stop()
		cancel()
	}
}

func (e *Elector) log() *slog.Logger {
	return e.cfg.Logger.With("name", e.cfg.Name, "lock", e.cfg.Lock.Describe(), "identity", e.id)
}

type stopper interface{ Stop() bool }

type noStop struct{}

func (noStop) Stop() bool { return false }
