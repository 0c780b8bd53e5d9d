package leaderelection

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"k8s.io/utils/clock"
)

// Defaults of Config, the values Kubernetes' own components use.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// JitterFactor spreads a candidate's acquisition attempts: it waits a
// random time in [RetryPeriod, RetryPeriod*(1+JitterFactor)) between them,
// so candidates started together do not hit the server in lock step.
// RenewDeadline must exceed RetryPeriod*JitterFactor.
const JitterFactor = 1.2

// Config configures an Elector. Zero-valued fields get the documented
// defaults; New validates the result.
type Config struct {
	// Lock is the lock the candidates compete for. Required.
	Lock Lock
	// Name names the elector in logs and metrics. Default Lock.Describe().
	Name string

	// LeaseDuration is how long other candidates wait, after they last saw
	// the lock record change, before they may take it over. It is written
	// into the record in whole seconds, so it must be a whole number of
	// seconds. Default 15s.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps leading without a
	// successful renewal, counted from the start of its last successful
	// one; then it gives up. Must be below LeaseDuration: the difference is
	// the time a former leader has to stop acting before another candidate
	// may start, and it must also cover the drift between the candidates'
	// clock rates over a LeaseDuration. Default 10s.
	RenewDeadline time.Duration
	// RetryPeriod is the time between attempts to acquire or renew. Default 2s.
	RetryPeriod time.Duration

	// Callbacks are called as leadership changes. OnStartedLeading is required.
	Callbacks Callbacks
	// ReleaseOnCancel makes Run release the lock when its context is
	// cancelled while leading (after OnStartedLeading returned): it writes a
	// record with no holder and a one-second lease duration, so another
	// candidate takes over at once instead of after LeaseDuration. Only
	// safe if OnStartedLeading stops all leader work before returning.
	ReleaseOnCancel bool

	// Clock measures every duration. Default the real clock.
	Clock clock.WithDelayedExecution
	// Logger receives leadership changes and failed attempts. Default discards.
	Logger *slog.Logger
	// Metrics exports leader_election_master_status. Default none.
	Metrics MetricsProvider
}

// withDefaults returns cfg with defaults filled in and checks it.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Lock == nil {
		return cfg, errors.New("leaderelection: Config.Lock is required")
	}
	if cfg.Lock.Identity() == "" {
		return cfg, errors.New("leaderelection: the lock's identity is empty")
	}
	if cfg.Callbacks.OnStartedLeading == nil {
		return cfg, errors.New("leaderelection: Callbacks.OnStartedLeading is required")
	}
	if cfg.Name == "" {
		cfg.Name = cfg.Lock.Describe()
	}
	if cfg.LeaseDuration == 0 {
		cfg.LeaseDuration = DefaultLeaseDuration
	}
	if cfg.RenewDeadline == 0 {
		cfg.RenewDeadline = DefaultRenewDeadline
	}
	if cfg.RetryPeriod == 0 {
		cfg.RetryPeriod = DefaultRetryPeriod
	}
	switch {
	case cfg.LeaseDuration < 0 || cfg.RenewDeadline < 0 || cfg.RetryPeriod < 0:
		return cfg, fmt.Errorf("leaderelection: LeaseDuration (%v), RenewDeadline (%v) and RetryPeriod (%v) must be positive",
			cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod)
	case cfg.LeaseDuration%time.Second != 0:
		return cfg, fmt.Errorf("leaderelection: LeaseDuration (%v) must be a whole number of seconds", cfg.LeaseDuration)
	case cfg.LeaseDuration/time.Second > math.MaxInt32:
		return cfg, fmt.Errorf("leaderelection: LeaseDuration (%v) is too long", cfg.LeaseDuration)
	case cfg.LeaseDuration <= cfg.RenewDeadline:
		return cfg, fmt.Errorf("leaderelection: LeaseDuration (%v) must be greater than RenewDeadline (%v)",
			cfg.LeaseDuration, cfg.RenewDeadline)
	case cfg.RenewDeadline <= time.Duration(JitterFactor*float64(cfg.RetryPeriod)):
		return cfg, fmt.Errorf("leaderelection: RenewDeadline (%v) must be greater than RetryPeriod*JitterFactor (%v*%v)",
			cfg.RenewDeadline, cfg.RetryPeriod, JitterFactor)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = noopMetrics{}
	}
	return cfg, nil
}
