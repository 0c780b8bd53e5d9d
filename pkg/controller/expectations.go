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

// UIDTrackingExpectations is Expectations that also remembers which objects
// a key expects to see deleted, so that a deletion observed twice (once when
// the deletionTimestamp is set, again when the object goes) is counted once.
//
// The identifiers are whatever the controller chooses consistently, usually
// the objects' namespace/name keys or UIDs.
//
// UIDTrackingExpectations is safe for concurrent use.
type UIDTrackingExpectations struct {
	exp *Expectations

	mu sync.Mutex
	// pending holds, per key, the identifiers whose deletion is expected and
	// not yet observed. Guarded by mu, which is always taken before exp's.
	pending map[string]map[string]struct{}
}

// NewUIDTrackingExpectations returns an empty UIDTrackingExpectations.
func NewUIDTrackingExpectations(cfg ExpectationsConfig) (*UIDTrackingExpectations, error) {
	exp, err := NewExpectations(cfg)
	if err != nil {
		return nil, err
	}
	return &UIDTrackingExpectations{exp: exp, pending: make(map[string]map[string]struct{})}, nil
}

// GetExpectations is Expectations.GetExpectations.
func (u *UIDTrackingExpectations) GetExpectations(key string) (add, del int64, exists bool) {
	return u.exp.GetExpectations(key)
}

// SatisfiedExpectations is Expectations.SatisfiedExpectations.
func (u *UIDTrackingExpectations) SatisfiedExpectations(key string) bool {
	return u.exp.SatisfiedExpectations(key)
}

// ExpectCreations is Expectations.ExpectCreations; it leaves the expected
// deletions' identifiers as they are.
func (u *UIDTrackingExpectations) ExpectCreations(key string, adds int) {
	u.exp.ExpectCreations(key, adds)
}

// CreationObserved is Expectations.CreationObserved.
func (u *UIDTrackingExpectations) CreationObserved(key string) {
	u.exp.CreationObserved(key)
}

// LowerExpectations is Expectations.LowerExpectations.
func (u *UIDTrackingExpectations) LowerExpectations(key string, add, del int) {
	u.exp.LowerExpectations(key, add, del)
}

// RaiseExpectations is Expectations.RaiseExpectations.
func (u *UIDTrackingExpectations) RaiseExpectations(key string, add, del int) {
	u.exp.RaiseExpectations(key, add, del)
}

// ExpectDeletions replaces the record of key with the deletion of the
// objects named by ids (duplicates count once).
func (u *UIDTrackingExpectations) ExpectDeletions(key string, ids []string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	set := make(map[string]struct{}, len(ids))
	for _, id := range ids {
		set[id] = struct{}{}
	}
	if old := u.pending[key]; len(old) != 0 {
		u.exp.logger.Debug("replacing expected deletions", "key", key, "previous", len(old))
	}
	u.pending[key] = set
	u.exp.ExpectDeletions(key, len(set))
}

// DeletionObserved records that the object named id is gone (or going).
// Only the first observation of an expected id lowers the count; ids not
// expected are ignored.
func (u *UIDTrackingExpectations) DeletionObserved(key, id string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	set := u.pending[key]
	if _, ok := set[id]; !ok {
		return
	}
	delete(set, id)
	u.exp.DeletionObserved(key)
}

// ExpectedDeletions returns a copy of the identifiers key still expects to
// see deleted, in no particular order.
func (u *UIDTrackingExpectations) ExpectedDeletions(key string) []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	set := u.pending[key]
	if len(set) == 0 {
		return nil
	}
	out := make([]string, 0, len(set))
	for id := range set {
		out = append(out, id)
	}
	return out
}

// DeleteExpectations forgets the record of key and its expected identifiers.
func (u *UIDTrackingExpectations) DeleteExpectations(key string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.pending, key)
	u.exp.DeleteExpectations(key)
}
