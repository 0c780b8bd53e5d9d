package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
)

// gatedTransport answers every request once gate closes, counting those
// it holds.
type gatedTransport struct {
	gate          chan struct{}
	held, maxHeld atomic.Int32
}

func (g *gatedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	n := g.held.Add(1)
	for {
		m := g.maxHeld.Load()
		if n <= m || g.maxHeld.CompareAndSwap(m, n) {
			break
		}
	}
	defer g.held.Add(-1)
	select {
	case <-g.gate:
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("{}")), Request: r}, nil
}

// Two clients sharing a limit of 3 never have more than 3 requests at the
// transport: the others wait for a slot, and all finish once slots free.
func TestInFlightLimitSharedByClients(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &gatedTransport{gate: make(chan struct{})}
		limit, err := NewInFlightLimit(3)
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{Host: "http://kplane.test", HTTPClient: &http.Client{Transport: tr}, InFlight: limit}
		a, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		b, err := New(cfg.WithoutCredentials())
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 10)
		for i := range 10 {
			c := a
			if i%2 == 1 {
				c = b
			}
			wg.Go(func() {
				_, err := c.Do(context.Background(), Request{Path: "/api"})
				errs <- err
			})
		}
		synctest.Wait()
		if got := tr.held.Load(); got != 3 {
			t.Errorf("%d requests reached the transport, want 3", got)
		}
		if got := limit.InUse(); got != 3 {
			t.Errorf("InUse = %d, want 3", got)
		}
		close(tr.gate)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		if got := tr.maxHeld.Load(); got != 3 {
			t.Errorf("at most %d requests were outstanding, want 3", got)
		}
		if got := limit.InUse(); got != 0 {
			t.Errorf("InUse = %d after every request finished", got)
		}
	})
}

// A request waiting for a slot gives up with its context.
func TestInFlightLimitWaitEndsWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &gatedTransport{gate: make(chan struct{})}
		limit, err := NewInFlightLimit(1)
		if err != nil {
			t.Fatal(err)
		}
		c, err := New(Config{Host: "http://kplane.test", HTTPClient: &http.Client{Transport: tr}, InFlight: limit})
		if err != nil {
			t.Fatal(err)
		}
		go func() { _, _ = c.Do(context.Background(), Request{Path: "/api"}) }()
		synctest.Wait()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := c.Do(ctx, Request{Path: "/apis"})
			done <- err
		}()
		synctest.Wait()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("waiting request ended with %v, want context.Canceled", err)
		}
		if got := tr.held.Load(); got != 1 {
			t.Errorf("%d requests reached the transport, want 1", got)
		}
		close(tr.gate)
		synctest.Wait()
		if got := limit.InUse(); got != 0 {
			t.Errorf("InUse = %d after the requests ended", got)
		}
	})
	if _, err := NewInFlightLimit(0); err == nil {
		t.Error("a limit of 0 was accepted")
	}
}
