package leaderelection

import (
	"net/http"
	"sync"
	"time"
)

// HealthCheck adapts an Elector to a health endpoint (/healthz, /livez):
// it fails when the elector leads but cannot renew, see Elector.Check. It
// exists before the elector so that the health server can start first; it
// passes until SetElector is called. It is safe for concurrent use.
type HealthCheck struct {
	maxOverdue time.Duration

	mu      sync.Mutex
	elector *Elector
}

// NewHealthCheck returns a HealthCheck that tolerates a renewal overdue by
// up to maxOverdue beyond the elector's RetryPeriod.
func NewHealthCheck(maxOverdue time.Duration) *HealthCheck {
	return &HealthCheck{maxOverdue: maxOverdue}
}

// SetElector sets the elector to check.
func (h *HealthCheck) SetElector(e *Elector) {
	h.mu.Lock()
	h.elector = e
	h.mu.Unlock()
}

// Name is the check's name, "leaderElection".
func (h *HealthCheck) Name() string { return "leaderElection" }

// Check returns the elector's Check error, nil without an elector.
func (h *HealthCheck) Check(*http.Request) error {
	h.mu.Lock()
	e := h.elector
	h.mu.Unlock()
	if e == nil {
		return nil
	}
	return e.Check(h.maxOverdue)
}
