package controller

import "sync"

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
