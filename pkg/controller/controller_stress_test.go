package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kplane/kplane/pkg/workqueue"
)

// TestRunInvariants drives a Controller on the real rate-limited queue with
// concurrent producers and a handler that fails at random, and checks the
// two promises a level-triggered controller relies on:
//
//   - a key is never handled by two workers at once;
//   - once the producers stop, every key's last successful sync saw the
//     key's latest state (no change is lost).
func TestRunInvariants(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	const (
		keys      = 50
		producers = 4
		adds      = 500 // per producer
		workers   = 8
	)
	synctest.Test(t, func(t *testing.T) {
		q, err := workqueue.NewRateLimiting(workqueue.RateLimitingConfig[string]{})
		if err != nil {
			t.Fatal(err)
		}
		var (
			mu       sync.Mutex
			version  = map[string]int{} // the state producers last wrote
			synced   = map[string]int{} // the newest state a successful sync saw
			inFlight = map[string]bool{}
			rng      = rand.New(rand.NewPCG(seed, 1))
		)
		c, err := New(Config{
			Name: "stress", Queue: q, Logger: slog.New(slog.DiscardHandler),
			SyncHandler: func(_ context.Context, key string) error {
				mu.Lock()
				if inFlight[key] {
					t.Errorf("key %s handled by two workers at once", key)
				}
				inFlight[key] = true
				v := version[key]
				fail := rng.Float64() < 0.3
				mu.Unlock()
				time.Sleep(time.Millisecond) // hold the key while others run
				mu.Lock()
				defer mu.Unlock()
				inFlight[key] = false
				if fail {
					return errors.New("transient")
				}
				synced[key] = max(synced[key], v)
				return nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx, workers) }()

		var wg sync.WaitGroup
		for p := range producers {
			prng := rand.New(rand.NewPCG(seed, uint64(p)+2))
			wg.Go(func() {
				for range adds {
					key := fmt.Sprintf("ns/k%d", prng.IntN(keys))
					mu.Lock()
					version[key]++
					mu.Unlock()
					c.EnqueueKey(key)
					if prng.IntN(10) == 0 {
						time.Sleep(time.Duration(prng.IntN(5)) * time.Millisecond)
					}
				}
			})
		}
		wg.Wait()
		// Long enough for every backoff (at most 15 retries) to expire.
		time.Sleep(24 * time.Hour)
		synctest.Wait()

		mu.Lock()
		for key, v := range version {
			if synced[key] != v {
				t.Errorf("key %s: last successful sync saw state %d, latest is %d", key, synced[key], v)
			}
		}
		mu.Unlock()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}
