package leaderelection

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestPrometheusMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewPedanticRegistry()
		m, err := NewPrometheusMetrics(PrometheusConfig{Registerer: reg})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := NewPrometheusMetrics(PrometheusConfig{Registerer: reg}); err == nil {
			t.Error("registering twice succeeded")
		}
		expect := func(v string) {
			t.Helper()
			want := `# HELP leader_election_master_status Whether this process leads the named election: 1 while leading, 0 otherwise.
# TYPE leader_election_master_status gauge
leader_election_master_status{name="ctrl"} ` + v + "\n"
			if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "leader_election_master_status"); err != nil {
				t.Error(err)
			}
		}
		e, err := New(Config{
			Lock: &fakeLock{store: &fakeStore{}, id: "a"}, Name: "ctrl", Metrics: m,
			Callbacks: Callbacks{OnStartedLeading: func(ctx context.Context) { <-ctx.Done() }},
		})
		if err != nil {
			t.Fatal(err)
		}
		expect("0")
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- e.Run(ctx) }()
		synctest.Wait()
		expect("1")
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		expect("0")
	})
}
