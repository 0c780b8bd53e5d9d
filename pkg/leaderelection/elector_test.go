package leaderelection

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// recorder collects what an elector's callbacks saw, with the (bubble)
// time of each event.
type recorder struct {
	mu        sync.Mutex
	events    []string
	leaders   []string
	startedAt time.Time
	cancelled time.Time
	stopped   bool
}

func (r *recorder) callbacks(id string) Callbacks {
	return Callbacks{
		OnStartedLeading: func(ctx context.Context) {
			r.mu.Lock()
			r.startedAt = time.Now()
			r.events = append(r.events, "started "+id)
			r.mu.Unlock()
			<-ctx.Done()
			r.mu.Lock()
			r.cancelled = time.Now()
			r.events = append(r.events, "cancelled "+id)
			r.mu.Unlock()
		},
		OnStoppedLeading: func() {
			r.mu.Lock()
			r.stopped = true
			r.events = append(r.events, "stopped "+id)
			r.mu.Unlock()
		},
		OnNewLeader: func(leader string) {
			r.mu.Lock()
			r.leaders = append(r.leaders, leader)
			r.mu.Unlock()
		},
	}
}

func (r *recorder) snapshot() (events, leaders []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...), append([]string(nil), r.leaders...)
}

// candidate is an elector running in the test's bubble.
type candidate struct {
	lock   *fakeLock
	e      *Elector
	rec    *recorder
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned
	err    error         // what Run returned, set before done is closed
}

func startCandidate(t *testing.T, store *fakeStore, id string, mutate func(*Config)) *candidate {
	t.Helper()
	c := &candidate{lock: &fakeLock{store: store, id: id}, rec: &recorder{}, done: make(chan struct{})}
	cfg := Config{Lock: c.lock, Callbacks: c.rec.callbacks(id)}
	if mutate != nil {
		mutate(&cfg)
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.e = e
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go func() {
		c.err = e.Run(ctx)
		close(c.done)
	}()
	t.Cleanup(func() {
		cancel()
		<-c.done
	})
	return c
}

// stop cancels the candidate and returns what Run returned.
func (c *candidate) stop() error {
	c.cancel()
	return c.wait()
}

// wait waits for Run to return and returns what it returned.
func (c *candidate) wait() error {
	<-c.done
	return c.err
}

func (c *candidate) leading() bool { return c.e.IsLeader() }

func TestAcquireEmptyLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{}
		start := time.Now()
		c := startCandidate(t, store, "a", nil)
		synctest.Wait()
		if !c.leading() {
			t.Fatal("candidate does not lead an empty lock")
		}
		rec, _, _ := store.get()
		want := Record{HolderIdentity: "a", LeaseDurationSeconds: 15, AcquireTime: start, RenewTime: start}
		if diff := cmp.Diff(want, rec); diff != "" {
			t.Errorf("record (-want +got):\n%s", diff)
		}
		if got := c.e.GetLeader(); got != "a" {
			t.Errorf("GetLeader = %q, want a", got)
		}
		if err := c.stop(); err != nil {
			t.Errorf("Run = %v, want nil after cancel", err)
		}
		events, leaders := c.rec.snapshot()
		if diff := cmp.Diff([]string{"started a", "cancelled a", "stopped a"}, events); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"a"}, leaders); diff != "" {
			t.Errorf("OnNewLeader (-want +got):\n%s", diff)
		}
		if c.leading() {
			t.Error("IsLeader after Run returned")
		}
	})
}

func TestRespectUnexpiredLeaseOfAnotherHolder(t *testing.T) {
	// The record's own timestamps say nothing about expiry: a renewTime far
	// in the past (a holder whose clock is behind) or in the future (ahead)
	// must not change when the lease is taken over, which is LeaseDuration
	// after this candidate saw the record last change.
	for _, tc := range []struct {
		name  string
		renew time.Duration // the record's renewTime relative to now
	}{
		{"renewTime now", 0},
		{"renewTime an hour ago", -time.Hour},
		{"renewTime in an hour", time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := &fakeStore{}
				start := time.Now()
				store.set(Record{HolderIdentity: "other", LeaseDurationSeconds: 15,
					AcquireTime: start.Add(tc.renew), RenewTime: start.Add(tc.renew), LeaderTransitions: 3})
				c := startCandidate(t, store, "a", nil)
				time.Sleep(15*time.Second - time.Nanosecond)
				synctest.Wait()
				if c.leading() {
					t.Fatalf("took over a lease %v after seeing it, before its duration passed", time.Since(start))
				}
				// The next attempt after expiry comes within one jittered retry period.
				time.Sleep(time.Duration((1 + JitterFactor) * float64(DefaultRetryPeriod)))
				synctest.Wait()
				if !c.leading() {
					t.Fatalf("did not take over an expired lease after %v", time.Since(start))
				}
				rec, _, _ := store.get()
				if rec.HolderIdentity != "a" || rec.LeaderTransitions != 4 {
					t.Errorf("record after takeover = %+v, want holder a and 4 transitions", rec)
				}
				if !rec.AcquireTime.Equal(c.rec.startedAt) && rec.AcquireTime.After(c.rec.startedAt) {
					t.Errorf("acquire time %v after OnStartedLeading at %v", rec.AcquireTime, c.rec.startedAt)
				}
			})
		})
	}
}

func TestNeverTakeOverALeaseThatKeepsChanging(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{}
		store.set(Record{HolderIdentity: "other", LeaseDurationSeconds: 15})
		c := startCandidate(t, store, "a", nil)
		// The holder renews every 10s, within the lease duration, with a
		// renewTime that never moves (its clock is stuck): only the change
		// of the record counts.
		for range 12 {
			time.Sleep(10 * time.Second)
			store.set(Record{HolderIdentity: "other", LeaseDurationSeconds: 15})
			synctest.Wait()
			if c.leading() {
				t.Fatal("took over a lease that was being renewed")
			}
		}
		// Seen within a jittered retry period, expired 15s later, taken at
		// the next attempt.
		time.Sleep(25 * time.Second)
		synctest.Wait()
		if !c.leading() {
			t.Fatal("did not take over once renewals stopped")
		}
	})
}

func TestLeaderRenews(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{}
		start := time.Now()
		c := startCandidate(t, store, "a", nil)
		synctest.Wait()
		for i := 1; i <= 10; i++ {
			time.Sleep(DefaultRetryPeriod)
			synctest.Wait()
			rec, _, _ := store.get()
			want := Record{HolderIdentity: "a", LeaseDurationSeconds: 15, AcquireTime: start, RenewTime: time.Now()}
			if diff := cmp.Diff(want, rec); diff != "" {
				t.Fatalf("renewal %d (-want +got):\n%s", i, diff)
			}
		}
		if store.writes != 11 {
			t.Errorf("%d writes, want 11 (create + 10 renewals, one request each)", store.writes)
		}
		if !c.leading() {
			t.Error("leader stopped leading while renewals succeed")
		}
	})
}

func TestLeaderGivesUpAtRenewDeadline(t *testing.T) {
	for _, mode := range []string{"requests fail", "requests hang"} {
		t.Run(mode, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := &fakeStore{}
				c := startCandidate(t, store, "a", nil)
				synctest.Wait()
				time.Sleep(3 * DefaultRetryPeriod) // three renewals
				synctest.Wait()
				lastRenewal := time.Now()
				if mode == "requests fail" {
					c.lock.down.Store(true)
				} else {
					c.lock.hang.Store(true)
				}
				time.Sleep(DefaultRenewDeadline - time.Nanosecond)
				synctest.Wait()
				if !c.leading() {
					t.Fatalf("gave up %v after the last renewal, before the renew deadline", time.Since(lastRenewal))
				}
				time.Sleep(time.Nanosecond)
				synctest.Wait()
				if c.leading() {
					t.Fatal("still leading at the renew deadline")
				}
				if err := c.wait(); !errors.Is(err, ErrLeadershipLost) {
					t.Errorf("Run = %v, want ErrLeadershipLost", err)
				}
				c.rec.mu.Lock()
				defer c.rec.mu.Unlock()
				if got := c.rec.cancelled.Sub(lastRenewal); got != DefaultRenewDeadline {
					t.Errorf("leader context cancelled %v after the last renewal, want %v", got, DefaultRenewDeadline)
				}
				if !c.rec.stopped {
					t.Error("OnStoppedLeading not called")
				}
			})
		})
	}
}

func TestLeaderStepsDownOnConflict(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{}
		c := startCandidate(t, store, "a", nil)
		synctest.Wait()
		time.Sleep(DefaultRetryPeriod / 2)
		// Someone else writes the lock (for example a candidate that wrongly
		// believed it expired): the leader's next renewal conflicts, it reads
		// the record, and sees it lost.
		store.set(Record{HolderIdentity: "thief", LeaseDurationSeconds: 15})
		stolen := time.Now()
		synctest.Wait()
		if err := c.wait(); !errors.Is(err, ErrLeadershipLost) {
			t.Errorf("Run = %v, want ErrLeadershipLost", err)
		}
		c.rec.mu.Lock()
		defer c.rec.mu.Unlock()
		if got := c.rec.cancelled.Sub(stolen); got > DefaultRetryPeriod {
			t.Errorf("stepped down %v after the conflict, want within one retry period", got)
		}
		if got := c.e.GetLeader(); got != "thief" {
			t.Errorf("GetLeader = %q, want thief", got)
		}
		rec, _, _ := store.get()
		if rec.HolderIdentity != "thief" {
			t.Errorf("holder = %q: the leader overwrote the winner", rec.HolderIdentity)
		}
	})
}

func TestReleaseOnCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{}
		a := startCandidate(t, store, "a", func(c *Config) { c.ReleaseOnCancel = true })
		synctest.Wait()
		b := startCandidate(t, store, "b", nil)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if b.leading() {
			t.Fatal("b leads while a holds the lock")
		}
		if err := a.stop(); err != nil {
			t.Fatalf("Run = %v", err)
		}
		released := time.Now()
		rec, _, _ := store.get()
		if rec.HolderIdentity != "" || rec.LeaseDurationSeconds != 1 || rec.LeaderTransitions != 0 {
			t.Errorf("released record = %+v, want no holder, 1s and 0 transitions", rec)
		}
		events, _ := a.rec.snapshot()
		if diff := cmp.Diff([]string{"started a", "cancelled a", "stopped a"}, events); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
		// b takes over at its next attempt, not LeaseDuration later.
		time.Sleep(time.Duration((1 + JitterFactor) * float64(DefaultRetryPeriod)))
		synctest.Wait()
		if !b.leading() {
			t.Fatalf("b does not lead %v after the release", time.Since(released))
		}
		rec, _, _ = store.get()
		if rec.HolderIdentity != "b" || rec.LeaderTransitions != 1 {
			t.Errorf("record = %+v, want holder b and 1 transition", rec)
		}
	})
}

func TestNoReleaseWithoutReleaseOnCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{}
		a := startCandidate(t, store, "a", nil)
		synctest.Wait()
		if err := a.stop(); err != nil {
			t.Fatalf("Run = %v", err)
		}
		if rec, _, _ := store.get(); rec.HolderIdentity != "a" {
			t.Errorf("holder after cancel = %q, want a (kept until it expires)", rec.HolderIdentity)
		}
	})
}

func TestOnNewLeaderOncePerChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{}
		store.set(Record{HolderIdentity: "x", LeaseDurationSeconds: 15})
		c := startCandidate(t, store, "a", nil)
		c.lock.readOnly.Store(true) // watch only, until the end
		step := func(r *Record) {
			time.Sleep(5 * time.Second)
			if r != nil {
				store.set(*r)
			}
			synctest.Wait()
		}
		step(nil)                                                    // x still
		step(&Record{HolderIdentity: "x", LeaseDurationSeconds: 15}) // x renews
		step(&Record{HolderIdentity: "y", LeaseDurationSeconds: 15}) // y
		step(&Record{HolderIdentity: "y", LeaseDurationSeconds: 15}) // y renews
		step(&Record{LeaseDurationSeconds: 15})                      // released, not reported
		step(&Record{HolderIdentity: "y", LeaseDurationSeconds: 15}) // y again: a new term
		step(&Record{HolderIdentity: "z", LeaseDurationSeconds: 15}) // z
		c.lock.readOnly.Store(false)
		time.Sleep(30 * time.Second) // z expires, a acquires
		synctest.Wait()
		if !c.leading() {
			t.Fatal("a does not lead")
		}
		time.Sleep(10 * time.Second) // a renews, not reported again
		synctest.Wait()
		if err := c.stop(); err != nil {
			t.Fatal(err)
		}
		_, leaders := c.rec.snapshot()
		if diff := cmp.Diff([]string{"x", "y", "y", "z", "a"}, leaders); diff != "" {
			t.Errorf("OnNewLeader calls (-want +got):\n%s", diff)
		}
	})
}

func TestSlowOnNewLeaderSeesLatest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{}
		store.set(Record{HolderIdentity: "x", LeaseDurationSeconds: 15})
		var mu sync.Mutex
		var got []string
		c := startCandidate(t, store, "a", func(cfg *Config) {
			cfg.Callbacks.OnNewLeader = func(id string) {
				mu.Lock()
				got = append(got, id)
				mu.Unlock()
				time.Sleep(time.Minute) // slower than the changes below
			}
		})
		for _, h := range []string{"y", "z", "w"} {
			time.Sleep(3 * time.Second)
			store.set(Record{HolderIdentity: h, LeaseDurationSeconds: 3600})
		}
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if err := c.stop(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if diff := cmp.Diff([]string{"x", "w"}, got); diff != "" {
			t.Errorf("OnNewLeader calls (-want +got):\n%s", diff)
		}
	})
}

func TestRunWaitsForOnStartedLeading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{}
		var returned time.Time
		c := startCandidate(t, store, "a", func(cfg *Config) {
			cfg.ReleaseOnCancel = true
			cfg.Callbacks.OnStartedLeading = func(ctx context.Context) {
				<-ctx.Done()
				time.Sleep(3 * time.Second) // winding down
				returned = time.Now()
			}
			cfg.Callbacks.OnStoppedLeading = func() {
				if returned.IsZero() {
					t.Error("OnStoppedLeading before OnStartedLeading returned")
				}
				if rec, _, _ := store.get(); rec.HolderIdentity != "" {
					t.Error("OnStoppedLeading before the release")
				}
			}
		})
		synctest.Wait()
		cancelled := time.Now()
		if err := c.stop(); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(cancelled); got != 3*time.Second {
			t.Errorf("Run returned %v after cancel, want 3s (when OnStartedLeading returned)", got)
		}
	})
}

func TestRunTwiceAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := startCandidate(t, &fakeStore{}, "a", nil)
		synctest.Wait()
		err := c.e.Run(context.Background())
		if err == nil || !strings.Contains(err.Error(), "already in progress") {
			t.Errorf("second Run = %v, want an already-in-progress error", err)
		}
		if err := c.stop(); err != nil {
			t.Fatal(err)
		}
		// Sequential runs are fine: the lock is still ours, so it is taken
		// back at once.
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- c.e.Run(ctx) }()
		synctest.Wait()
		if !c.leading() {
			t.Error("second Run does not lead")
		}
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

func TestCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{}
		hc := NewHealthCheck(time.Second)
		if err := hc.Check(nil); err != nil {
			t.Errorf("Check without an elector = %v", err)
		}
		c := startCandidate(t, store, "a", nil)
		hc.SetElector(c.e)
		synctest.Wait()
		if err := hc.Check(nil); err != nil {
			t.Errorf("Check while renewing = %v", err)
		}
		c.lock.down.Store(true)
		time.Sleep(DefaultRetryPeriod + time.Second)
		synctest.Wait()
		if err := hc.Check(nil); err != nil {
			t.Errorf("Check at exactly the tolerated delay = %v", err)
		}
		time.Sleep(time.Nanosecond)
		if err := hc.Check(nil); err == nil {
			t.Error("Check passes with the renewal overdue")
		}
		time.Sleep(DefaultRenewDeadline)
		c.wait()
		if err := hc.Check(nil); err != nil {
			t.Errorf("Check after leadership ended = %v", err)
		}
	})
}

func TestCheckStuckCallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{}
		release := make(chan struct{})
		c := startCandidate(t, store, "a", func(cfg *Config) {
			cfg.Callbacks.OnStartedLeading = func(context.Context) { <-release } // ignores its context
		})
		synctest.Wait()
		c.lock.down.Store(true)
		time.Sleep(DefaultRenewDeadline + time.Second)
		synctest.Wait()
		if c.leading() {
			t.Fatal("leading after the renew deadline")
		}
		if err := c.e.Check(time.Second); err == nil {
			t.Error("Check passes while a callback acts without leadership")
		}
		close(release)
		c.wait()
	})
}

type fakeMetrics struct {
	mu     sync.Mutex
	values map[string][]string
}

func (m *fakeMetrics) NewLeaderMetric(name string) LeaderMetric { return fakeMetric{m, name} }

type fakeMetric struct {
	m    *fakeMetrics
	name string
}

func (f fakeMetric) On()  { f.set("on") }
func (f fakeMetric) Off() { f.set("off") }
func (f fakeMetric) set(v string) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	f.m.values[f.name] = append(f.m.values[f.name], v)
}

func TestMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &fakeMetrics{values: map[string][]string{}}
		c := startCandidate(t, &fakeStore{}, "a", func(cfg *Config) { cfg.Metrics = m; cfg.Name = "ctrl" })
		synctest.Wait()
		if err := c.stop(); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[string][]string{"ctrl": {"on", "off"}}, m.values); diff != "" {
			t.Errorf("metric (-want +got):\n%s", diff)
		}
	})
}

func TestNewValidates(t *testing.T) {
	lock := &fakeLock{store: &fakeStore{}, id: "a"}
	start := func(context.Context) {}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // substring of the error, "" for none
	}{
		{"defaults", Config{Lock: lock, Callbacks: Callbacks{OnStartedLeading: start}}, ""},
		{"no lock", Config{Callbacks: Callbacks{OnStartedLeading: start}}, "Lock is required"},
		{"empty identity", Config{Lock: &fakeLock{store: &fakeStore{}}, Callbacks: Callbacks{OnStartedLeading: start}}, "identity is empty"},
		{"no OnStartedLeading", Config{Lock: lock}, "OnStartedLeading is required"},
		{"lease not above renew", Config{Lock: lock, Callbacks: Callbacks{OnStartedLeading: start},
			LeaseDuration: 10 * time.Second, RenewDeadline: 10 * time.Second}, "LeaseDuration (10s) must be greater than RenewDeadline (10s)"},
		{"renew not above jittered retry", Config{Lock: lock, Callbacks: Callbacks{OnStartedLeading: start},
			RenewDeadline: 6 * time.Second, RetryPeriod: 5 * time.Second}, "RenewDeadline (6s) must be greater than RetryPeriod*JitterFactor"},
		{"renew just above jittered retry", Config{Lock: lock, Callbacks: Callbacks{OnStartedLeading: start},
			RenewDeadline: 6*time.Second + 1, RetryPeriod: 5 * time.Second}, ""},
		{"negative", Config{Lock: lock, Callbacks: Callbacks{OnStartedLeading: start}, RetryPeriod: -time.Second}, "must be positive"},
		{"fractional lease", Config{Lock: lock, Callbacks: Callbacks{OnStartedLeading: start}, LeaseDuration: 15500 * time.Millisecond}, "whole number of seconds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("New = %v, want no error", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("New = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestAcquisitionSlowerThanRenewDeadlineDoesNotLead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{}
		c := &fakeLock{store: store, id: "a"}
		c.slowWrite.Store(int64(DefaultRenewDeadline + time.Second))
		rec := &recorder{}
		e, err := New(Config{Lock: c, Callbacks: rec.callbacks("a")})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Run(context.Background()); !errors.Is(err, ErrLeadershipLost) {
			t.Errorf("Run = %v, want ErrLeadershipLost", err)
		}
		if events, _ := rec.snapshot(); len(events) != 0 {
			t.Errorf("callbacks called: %v", events)
		}
		if got, _, _ := store.get(); got.HolderIdentity != "a" {
			t.Errorf("holder %q, want a: the write did land", got.HolderIdentity)
		}
	})
}
