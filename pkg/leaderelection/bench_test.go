package leaderelection

import (
	"context"
	"testing"
	"time"
)

// BenchmarkRenew measures one renewal by a leader through LeaseLock and
// kplane's API server handler (no network): the fast path, a single
// conditional update.
func BenchmarkRenew(b *testing.B) {
	c := inProcessClient(b)
	lock, err := NewLeaseLock(LeaseLockConfig{Client: c, Namespace: "kube-system", Name: "bench", Identity: "a"})
	if err != nil {
		b.Fatal(err)
	}
	e, err := New(Config{Lock: lock, Callbacks: Callbacks{OnStartedLeading: func(context.Context) {}}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if ok, err := e.tryAcquireOrRenew(ctx, time.Now(), false); !ok {
		b.Fatalf("acquire: %v", err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := e.tryAcquireOrRenew(ctx, time.Now(), true); !ok {
			b.Fatalf("renew: %v", err)
		}
	}
}
