package leaderelection

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// TestConfigClock drives an elector only by a fake clock: every time it
// reads, waits for or times out on comes from Config.Clock. The synctest
// bubble only tells when every goroutine waits; its own time never moves
// the elector.
func TestConfigClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
		clk := testingclock.NewFakeClock(t0)
		store := &fakeStore{}
		c := startCandidate(t, store, "a", func(cfg *Config) { cfg.Clock = clk })
		synctest.Wait()
		if !c.leading() {
			t.Fatal("not leading an empty lock")
		}
		if rec, _, _ := store.get(); !rec.RenewTime.Equal(t0) {
			t.Errorf("renewTime %v, want the fake clock's %v", rec.RenewTime, t0)
		}

		// Bubble time alone changes nothing.
		time.Sleep(time.Hour)
		synctest.Wait()
		if !c.leading() || store.writes != 1 {
			t.Fatalf("bubble time moved the elector: leading %v, %d writes", c.leading(), store.writes)
		}

		clk.Step(DefaultRetryPeriod)
		synctest.Wait()
		if rec, _, _ := store.get(); store.writes != 2 || !rec.RenewTime.Equal(t0.Add(DefaultRetryPeriod)) {
			t.Fatalf("after one retry period: %d writes, renewTime %v", store.writes, rec.RenewTime)
		}
		lastRenewal := clk.Now()

		c.lock.hang.Store(true) // renewals block until the fake deadline
		for clk.Since(lastRenewal) < DefaultRenewDeadline {
			if !c.leading() {
				t.Fatalf("gave up %v after the last renewal", clk.Since(lastRenewal))
			}
			clk.Step(time.Second)
			synctest.Wait()
		}
		if c.leading() {
			t.Fatal("still leading at the renew deadline")
		}
		if err := c.wait(); !errors.Is(err, ErrLeadershipLost) {
			t.Errorf("Run = %v, want ErrLeadershipLost", err)
		}
	})
}
