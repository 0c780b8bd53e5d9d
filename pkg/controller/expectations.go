package controller

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// DefaultExpectationsTTL is how long a record of expectations holds a key back
// when the events it waits for never arrive (a watch dropped them, say). After
// that the key is treated as satisfied so the controller wakes up and
// re-examines the world rather than sleeping forever.
const DefaultExpectationsTTL = 5 * time.Minute

// ExpectationsConfig configures [NewExpectations] and
// [NewUIDTrackingExpectations].
type ExpectationsConfig struct {
	// Clock stamps records and measures their age. Defaults to the real clock.
	Clock clock.PassiveClock
	// TTL is the age after which a record no longer holds its key back.
	// Defaults to DefaultExpectationsTTL; must not be negative.
	TTL time.Duration
	// Logger receives debug messages about records. Defaults to slog.Default().
	Logger *slog.Logger
}

func (cfg *ExpectationsConfig) complete() error {
	if cfg.TTL < 0 {
		return errors.New("expectations ttl must not be negative")
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultExpectationsTTL
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return nil
}

// expectation is one key's outstanding creations and deletions.
type expectation struct {
	// add and del are the creations and deletions not yet observed; they may
	// go below zero when more events arrive than were expected.
	add, del int64
	// timestamp is when the record was last set (not lowered or raised).
	timestamp time.Time
}

// Expectations maps a controller key (usually the owner's namespace/name) to
// the number of creations and deletions it has issued and not yet observed.
//
// A controller sets expectations before it issues writes, its event handlers
// lower them as the informer delivers the results, and its sync handler
// skips work (other than status) while SatisfiedExpectations is false.
// Records are set, never accumulated: SetExpectations replaces the record.
//
// Expectations is safe for concurrent use; no method blocks beyond a mutex.
type Expectations struct {
	clock  clock.PassiveClock
	ttl    time.Duration
	logger *slog.Logger

	mu sync.Mutex
	// records holds one entry per key with outstanding or recently
	// satisfied expectations; entries live until DeleteExpectations.
	records map[string]*expectation
}

// NewExpectations returns an empty Expectations.
func NewExpectations(cfg ExpectationsConfig) (*Expectations, error) {
	if err := cfg.complete(); err != nil {
		return nil, err
	}
	return &Expectations{
		clock:   cfg.Clock,
		ttl:     cfg.TTL,
		logger:  cfg.Logger,
		records: make(map[string]*expectation),
	}, nil
}

// GetExpectations returns the outstanding creations and deletions of key and
// whether a record exists.
func (e *Expectations) GetExpectations(key string) (add, del int64, exists bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.records[key]
	if !ok {
		return 0, 0, false
	}
	return r.add, r.del, true
}

// SatisfiedExpectations reports whether the controller may act on key: true
// when there is no record, when both counts are at or below zero, or when the
// record is older than the TTL.
func (e *Expectations) SatisfiedExpectations(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.records[key]
	switch {
	case !ok:
		// Never set, or deleted: nothing to wait for.
		return true
	case r.add <= 0 && r.del <= 0:
		return true
	case e.clock.Since(r.timestamp) > e.ttl:
		e.logger.Debug("expectations expired", "key", key, "add", r.add, "del", r.del)
		return true
	default:
		return false
	}
}

// SetExpectations replaces the record of key with add creations and del
// deletions, stamped now.
func (e *Expectations) SetExpectations(key string, add, del int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.records[key] = &expectation{add: int64(add), del: int64(del), timestamp: e.clock.Now()}
	e.logger.Debug("expectations set", "key", key, "add", add, "del", del)
}

// ExpectCreations replaces the record of key with adds creations.
func (e *Expectations) ExpectCreations(key string, adds int) {
	e.SetExpectations(key, adds, 0)
}

// ExpectDeletions replaces the record of key with dels deletions.
func (e *Expectations) ExpectDeletions(key string, dels int) {
	e.SetExpectations(key, 0, dels)
}

// CreationObserved lowers the creations key waits for by one.
func (e *Expectations) CreationObserved(key string) {
	e.LowerExpectations(key, 1, 0)
}

// DeletionObserved lowers the deletions key waits for by one.
func (e *Expectations) DeletionObserved(key string) {
	e.LowerExpectations(key, 0, 1)
}

// LowerExpectations lowers the counts of key by add and del, typically when
// a write the controller meant to issue failed. It does nothing without a
// record and does not change the record's timestamp.
func (e *Expectations) LowerExpectations(key string, add, del int) {
	e.adjust(key, -int64(add), -int64(del))
}

// RaiseExpectations raises the counts of key by add and del. It does nothing
// without a record and does not change the record's timestamp.
func (e *Expectations) RaiseExpectations(key string, add, del int) {
	e.adjust(key, int64(add), int64(del))
}

func (e *Expectations) adjust(key string, add, del int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.records[key]
	if !ok {
		return
	}
	r.add += add
	r.del += del
}

// DeleteExpectations forgets the record of key, typically when the owner
// itself is deleted.
func (e *Expectations) DeleteExpectations(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.records, key)
}
