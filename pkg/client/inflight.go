package client

import (
	"context"
	"fmt"
)

// InFlightLimit bounds how many requests the clients sharing it have
// outstanding at once; watches do not count, as they stay open. A request
// over the limit waits for one to finish. It is safe for concurrent use.
//
// A control plane component that fans out (a ReplicaSet controller creating
// 256 pods in one slow-start batch, a node agent writing many statuses)
// through clients with no rate limit can exceed the API server's in-flight
// limit (kube-apiserver's --max-mutating-requests-inflight is 200) and be
// told 429 to retry after a second; waiting for a slot instead costs only
// the time the slot takes to free.
type InFlightLimit struct {
	slots chan struct{}
}

// NewInFlightLimit returns a limit of n outstanding requests; n must be
// positive.
func NewInFlightLimit(n int) (*InFlightLimit, error) {
	if n <= 0 {
		return nil, fmt.Errorf("client: in-flight limit must be positive, not %d", n)
	}
	return &InFlightLimit{slots: make(chan struct{}, n)}, nil
}

// acquire takes a slot, waiting until one is free or ctx ends. A nil limit
// has slots without end.
func (l *InFlightLimit) acquire(ctx context.Context) error {
	if l == nil {
		return nil
	}
	select {
	case l.slots <- struct{}{}:
		return nil
	default:
	}
	select {
	case l.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("client: waiting for an in-flight slot: %w", ctx.Err())
	}
}

// release frees a slot acquire took.
func (l *InFlightLimit) release() {
	if l != nil {
		<-l.slots
	}
}

// InUse reports how many slots are taken.
func (l *InFlightLimit) InUse() int {
	if l == nil {
		return 0
	}
	return len(l.slots)
}
