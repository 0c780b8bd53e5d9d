package leaderelection

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var leaseGR = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

// fakeStore is an in-memory lock record with versions, shared by the
// fakeLocks of several candidates.
type fakeStore struct {
	mu      sync.Mutex
	rec     Record
	version int
	exists  bool
	writes  int
}

func (s *fakeStore) get() (Record, string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rec, strconv.Itoa(s.version), s.exists
}

// set stores r unconditionally, as another writer would.
func (s *fakeStore) set(r Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rec, s.exists = r, true
	s.version++
	s.writes++
}

var errPartitioned = errors.New("partitioned from the server")

// fakeLock is one candidate's view of a fakeStore. down makes every call
// fail at once; hang makes every call block until its context ends;
// readOnly makes writes fail.
type fakeLock struct {
	store     *fakeStore
	id        string
	down      atomic.Bool
	hang      atomic.Bool
	readOnly  atomic.Bool
	slowWrite atomic.Int64 // nanoseconds every write takes, regardless of its context
}

var _ Lock = (*fakeLock)(nil)

func (l *fakeLock) fail(ctx context.Context) error {
	if l.hang.Load() {
		<-ctx.Done()
		return ctx.Err()
	}
	if l.down.Load() {
		return errPartitioned
	}
	return ctx.Err()
}

// write fails as configured; then, if slowWrite is set, it takes that
// long and succeeds even if ctx ended meanwhile (the server got it).
func (l *fakeLock) write(ctx context.Context) error {
	if l.readOnly.Load() {
		return errors.New("forbidden")
	}
	if err := l.fail(ctx); err != nil {
		return err
	}
	time.Sleep(time.Duration(l.slowWrite.Load()))
	return nil
}

func (l *fakeLock) Get(ctx context.Context) (Record, string, error) {
	if err := l.fail(ctx); err != nil {
		return Record{}, "", err
	}
	rec, v, ok := l.store.get()
	if !ok {
		return Record{}, "", apierrors.NewNotFound(leaseGR, "lock")
	}
	return rec, v, nil
}

func (l *fakeLock) Create(ctx context.Context, r Record) (string, error) {
	if err := l.write(ctx); err != nil {
		return "", err
	}
	s := l.store
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.exists {
		return "", apierrors.NewAlreadyExists(leaseGR, "lock")
	}
	s.rec, s.exists = r, true
	s.version++
	s.writes++
	return strconv.Itoa(s.version), nil
}

func (l *fakeLock) Update(ctx context.Context, r Record, version string) (string, error) {
	if err := l.write(ctx); err != nil {
		return "", err
	}
	s := l.store
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.exists {
		return "", apierrors.NewNotFound(leaseGR, "lock")
	}
	if version != strconv.Itoa(s.version) {
		return "", apierrors.NewConflict(leaseGR, "lock", errors.New("the object has been modified"))
	}
	s.rec = r
	s.version++
	s.writes++
	return strconv.Itoa(s.version), nil
}

func (l *fakeLock) Identity() string { return l.id }
func (l *fakeLock) Describe() string { return "test/lock" }
