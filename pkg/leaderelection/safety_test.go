package leaderelection

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/utils/clock"

	"github.com/kplane/kplane/pkg/apiserver"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/storage/memory"
)

// handlerTransport carries requests to an http.Handler in the calling
// goroutine, with no network, so that a kplane API server runs inside a
// synctest bubble and time advances only when every candidate waits.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, req)
	resp := rec.Result()
	resp.Request = req
	return resp, nil
}

// inProcessClient starts a kplane API server on a memory store, in the
// caller's synctest bubble, and returns a client for it. The store is
// closed when t ends.
func inProcessClient(t testing.TB) *client.Client {
	t.Helper()
	backend, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = backend.Close() })
	srv, err := apiserver.New(apiserver.Config{Backend: backend})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.Config{Host: "http://kplane.test", HTTPClient: &http.Client{Transport: handlerTransport{srv.Handler()}}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// flakyLock wraps a Lock with the failures of a candidate's network: down
// fails every call at once, hang blocks every call until its context ends.
type flakyLock struct {
	Lock
	down, hang atomic.Bool
}

func (l *flakyLock) fail(ctx context.Context) error {
	if l.hang.Load() {
		<-ctx.Done()
		return ctx.Err()
	}
	if l.down.Load() {
		return errPartitioned
	}
	return nil
}

func (l *flakyLock) Get(ctx context.Context) (Record, string, error) {
	if err := l.fail(ctx); err != nil {
		return Record{}, "", err
	}
	return l.Lock.Get(ctx)
}

func (l *flakyLock) Create(ctx context.Context, r Record) (string, error) {
	if err := l.fail(ctx); err != nil {
		return "", err
	}
	return l.Lock.Create(ctx, r)
}

func (l *flakyLock) Update(ctx context.Context, r Record, v string) (string, error) {
	if err := l.fail(ctx); err != nil {
		return "", err
	}
	return l.Lock.Update(ctx, r, v)
}

// skewedClock is the real clock (the bubble's, in synctest) set off by a
// fixed offset, as a machine whose clock is wrong. Durations are unaffected.
type skewedClock struct {
	clock.RealClock
	offset time.Duration
}

func (c skewedClock) Now() time.Time                  { return time.Now().Add(c.offset) }
func (c skewedClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// term is one leadership term as OnStartedLeading saw it, in bubble time:
// from the call to the cancellation of its context (cancelled) and to the
// return of the callback (returned).
type term struct {
	id                           string
	ctx                          context.Context
	started, cancelled, returned time.Time
}

// referee watches every term and reports two leaders.
type referee struct {
	t     *testing.T
	mu    sync.Mutex
	terms []*term
}

// start records a new term and checks that no other term's context is
// live and no other callback is still running.
func (r *referee) start(id string, ctx context.Context) *term {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	for _, o := range r.terms {
		if o.ctx.Err() == nil {
			r.t.Errorf("%s started leading at %v while %s (since %v) still leads", id, now, o.id, o.started)
		}
		if o.returned.IsZero() {
			r.t.Errorf("%s started leading at %v while %s (since %v, cancelled %v) still acts", id, now, o.id, o.started, o.cancelled)
		}
	}
	tm := &term{id: id, ctx: ctx, started: now}
	r.terms = append(r.terms, tm)
	context.AfterFunc(ctx, func() {
		r.mu.Lock()
		tm.cancelled = time.Now()
		r.mu.Unlock()
	})
	return tm
}

func (r *referee) returned(tm *term) {
	r.mu.Lock()
	defer r.mu.Unlock()
	tm.returned = time.Now()
}

func (r *referee) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.terms)
}

var stressSeed = flag.Uint64("seed", 0, "seed of TestAtMostOneLeader's random actions; 0 picks one")

// TestAtMostOneLeader runs several candidates against a kplane API server
// and, at random, advances time, partitions candidates from the server
// (requests failing or hanging), stops them (with or without releasing the
// lease) and starts them again. Leaders wind down for up to
// LeaseDuration-RenewDeadline after their context is cancelled, as the
// contract allows. No two terms may ever overlap: not their contexts, and
// not their callbacks. Every candidate's clock is off by up to an hour.
func TestAtMostOneLeader(t *testing.T) {
	seed := *stressSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -seed=%d)", seed, seed)
	steps := 2000
	if testing.Short() {
		steps = 300
	}
	synctest.Test(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(seed, 0))
		c := inProcessClient(t)
		ref := &referee{t: t}

		type slot struct {
			id      string
			lock    *flakyLock
			cancel  context.CancelFunc
			done    chan struct{} // closed when the current Run returned
			release bool
		}
		var slots []*slot
		var rngMu sync.Mutex // callbacks draw wind-down times from rng too
		start := func(s *slot) {
			lease, err := NewLeaseLock(LeaseLockConfig{Client: c, Namespace: "kube-system", Name: "stress", Identity: s.id})
			if err != nil {
				t.Fatal(err)
			}
			s.lock = &flakyLock{Lock: lease}
			s.release = rng.IntN(2) == 0
			e, err := New(Config{
				Lock:            s.lock,
				Clock:           skewedClock{offset: time.Duration(rng.Int64N(int64(2*time.Hour))) - time.Hour},
				ReleaseOnCancel: s.release,
				Callbacks: Callbacks{OnStartedLeading: func(ctx context.Context) {
					tm := ref.start(s.id, ctx)
					<-ctx.Done()
					rngMu.Lock()
					windDown := rand.N(DefaultLeaseDuration - DefaultRenewDeadline)
					rngMu.Unlock()
					time.Sleep(windDown)
					ref.returned(tm)
				}},
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			s.cancel, s.done = cancel, make(chan struct{})
			go func() {
				defer close(s.done)
				_ = e.Run(ctx)
			}()
		}
		running := func(s *slot) bool {
			select {
			case <-s.done:
				return false
			default:
				return true
			}
		}
		for i := range 4 {
			s := &slot{id: fmt.Sprintf("candidate-%d", i)}
			slots = append(slots, s)
			start(s)
		}

		for range steps {
			s := slots[rng.IntN(len(slots))]
			switch r := rng.IntN(100); {
			case r < 50:
				time.Sleep(time.Duration(rng.Int64N(int64(3 * time.Second))))
			case r < 62:
				s.lock.down.Store(!s.lock.down.Load())
			case r < 70:
				s.lock.hang.Store(!s.lock.hang.Load())
			case r < 85:
				if rng.IntN(3) == 0 {
					s.lock.hang.Store(true) // a crash: it never reaches the server again
				}
				s.cancel()
			default:
				if !running(s) {
					start(s)
				}
			}
			synctest.Wait()
		}

		// Heal everything: exactly one leader must emerge.
		for _, s := range slots {
			s.cancel()
			s.lock.hang.Store(false)
			s.lock.down.Store(false)
		}
		time.Sleep(DefaultLeaseDuration) // the winding down ends
		for _, s := range slots {
			<-s.done
			start(s)
		}
		time.Sleep(DefaultLeaseDuration + 3*DefaultRetryPeriod)
		synctest.Wait()
		ref.mu.Lock()
		live := 0
		for _, tm := range ref.terms {
			if tm.ctx.Err() == nil {
				live++
			}
		}
		ref.mu.Unlock()
		if live != 1 {
			t.Errorf("%d leaders after healing, want 1", live)
		}
		for _, s := range slots {
			s.cancel()
			<-s.done
		}
		terms := ref.count()
		t.Logf("%d leadership terms in %d steps", terms, steps)
		if terms < 5 {
			t.Errorf("only %d leadership terms: the test exercised too little", terms)
		}
	})
}
