package leaderelection

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/client"
)

// LeaseLockConfig configures a LeaseLock.
type LeaseLockConfig struct {
	// Client reaches the API server. Required.
	Client *client.Client
	// Namespace and Name name the Lease. Required.
	Namespace string
	Name      string
	// Identity is this candidate's identity, unique among the candidates,
	// such as the host name plus a random suffix. Required.
	Identity string
}

// LeaseLock is a Lock stored in a coordination.k8s.io/v1 Lease, the lock
// Kubernetes components use, so kplane's electors and client-go's compete
// fairly for the same Lease. Versions are the Lease's resourceVersion, and
// updates are conditional on it, so a concurrent writer gets a 409
// Conflict. It is safe for concurrent use.
type LeaseLock struct {
	leases   *client.ResourceClient[*coordinationv1.Lease]
	ns, name string
	identity string

	mu   sync.Mutex
	last *coordinationv1.Lease // last Lease read or written, to keep its other fields on update
}

var _ Lock = (*LeaseLock)(nil)

// NewLeaseLock returns a LeaseLock for cfg. It makes no request.
func NewLeaseLock(cfg LeaseLockConfig) (*LeaseLock, error) {
	switch {
	case cfg.Client == nil:
		return nil, errors.New("leaderelection: LeaseLockConfig.Client is required")
	case cfg.Namespace == "" || cfg.Name == "":
		return nil, errors.New("leaderelection: LeaseLockConfig.Namespace and Name are required")
	case cfg.Identity == "":
		return nil, errors.New("leaderelection: LeaseLockConfig.Identity is required")
	}
	return &LeaseLock{
		leases:   client.NewResource(cfg.Client, client.Leases).Namespace(cfg.Namespace),
		ns:       cfg.Namespace,
		name:     cfg.Name,
		identity: cfg.Identity,
	}, nil
}

// Get implements Lock.
func (l *LeaseLock) Get(ctx context.Context) (Record, string, error) {
	lease, err := l.leases.Get(ctx, l.name, metav1.GetOptions{})
	if err != nil {
		return Record{}, "", err
	}
	l.remember(lease)
	return recordFromSpec(lease.Spec), lease.ResourceVersion, nil
}

// Create implements Lock.
func (l *LeaseLock) Create(ctx context.Context, r Record) (string, error) {
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: l.ns, Name: l.name},
	}
	setSpec(&lease.Spec, r)
	created, err := l.leases.Create(ctx, lease, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	l.remember(created)
	return created.ResourceVersion, nil
}

// Update implements Lock. It keeps the Lease's other fields (labels,
// annotations, strategy) as last read.
func (l *LeaseLock) Update(ctx context.Context, r Record, version string) (string, error) {
	l.mu.Lock()
	var lease *coordinationv1.Lease
	if l.last != nil && l.last.ResourceVersion == version {
		lease = l.last.DeepCopy()
	}
	l.mu.Unlock()
	if lease == nil {
		lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: l.ns, Name: l.name, ResourceVersion: version}}
	}
	setSpec(&lease.Spec, r)
	updated, err := l.leases.Update(ctx, lease, metav1.UpdateOptions{})
	if err != nil {
		return "", err
	}
	l.remember(updated)
	return updated.ResourceVersion, nil
}

// Identity implements Lock.
func (l *LeaseLock) Identity() string { return l.identity }

// Describe implements Lock: "namespace/name".
func (l *LeaseLock) Describe() string { return fmt.Sprintf("%s/%s", l.ns, l.name) }

func (l *LeaseLock) remember(lease *coordinationv1.Lease) {
	l.mu.Lock()
	l.last = lease
	l.mu.Unlock()
}

// recordFromSpec reads a Lease spec; absent fields read as zero.
func recordFromSpec(s coordinationv1.LeaseSpec) Record {
	var r Record
	if s.HolderIdentity != nil {
		r.HolderIdentity = *s.HolderIdentity
	}
	if s.LeaseDurationSeconds != nil {
		r.LeaseDurationSeconds = int(*s.LeaseDurationSeconds)
	}
	if s.AcquireTime != nil {
		r.AcquireTime = s.AcquireTime.Time
	}
	if s.RenewTime != nil {
		r.RenewTime = s.RenewTime.Time
	}
	if s.LeaseTransitions != nil {
		r.LeaderTransitions = int(*s.LeaseTransitions)
	}
	return r
}

// setSpec writes r into s, leaving the fields a Record lacks as they are.
func setSpec(s *coordinationv1.LeaseSpec, r Record) {
	holder := r.HolderIdentity
	duration := int32(r.LeaseDurationSeconds)
	transitions := int32(r.LeaderTransitions)
	s.HolderIdentity = &holder
	s.LeaseDurationSeconds = &duration
	s.LeaseTransitions = &transitions
	s.AcquireTime = microTime(r.AcquireTime)
	s.RenewTime = microTime(r.RenewTime)
}

func microTime(t time.Time) *metav1.MicroTime {
	if t.IsZero() {
		return nil
	}
	return &metav1.MicroTime{Time: t}
}
