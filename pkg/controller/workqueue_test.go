package controller

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kplane/kplane/pkg/workqueue"
)

// The queues of pkg/workqueue are what a Controller is meant to run on.
var (
	_ Queue[string] = (*workqueue.RateLimitingQueue[string])(nil)
	_ Queue[string] = (*workqueue.PriorityQueue[string])(nil)
	_ Queue[string] = workqueue.RateLimitingInterface[string](nil)
)

// TestRealQueues runs a Controller on each real queue with a handler that
// always fails: with the default backoff (5ms doubling) the key is tried
// 1+MaxRetries times and then dropped, and a key that succeeds once is
// done.
func TestRealQueues(t *testing.T) {
	newRL := func() (Queue[string], error) {
		return workqueue.NewRateLimiting(workqueue.RateLimitingConfig[string]{})
	}
	newPrio := func() (Queue[string], error) {
		return workqueue.NewPriority(workqueue.PriorityConfig[string]{})
	}
	for name, newQueue := range map[string]func() (Queue[string], error){"rate limiting": newRL, "priority": newPrio} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q, err := newQueue()
				if err != nil {
					t.Fatal(err)
				}
				var failing, ok atomic.Int32
				m := newFakeMetrics()
				c, err := New(Config{
					Name: "real", Queue: q, MaxRetries: 5, Metrics: m,
					Logger: slog.New(slog.DiscardHandler),
					SyncHandler: func(_ context.Context, key string) error {
						if key == "ns/fail" {
							failing.Add(1)
							return errors.New("always")
						}
						ok.Add(1)
						return nil
					},
				})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan error, 1)
				go func() { done <- c.Run(ctx, 2) }()
				c.EnqueueKey("ns/fail")
				c.EnqueueKey("ns/ok")
				// 5+10+20+40+80ms of backoff; an hour is plenty.
				time.Sleep(time.Hour)
				synctest.Wait()
				if n := failing.Load(); n != 6 {
					t.Errorf("failing key tried %d times, want 6", n)
				}
				if n := ok.Load(); n != 1 {
					t.Errorf("good key tried %d times, want 1", n)
				}
				if m.dropped != 1 {
					t.Errorf("dropped = %d, want 1", m.dropped)
				}
				if n := q.NumRequeues("ns/fail"); n != 0 {
					t.Errorf("dropped key still has %d requeues", n)
				}
				cancel()
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}
