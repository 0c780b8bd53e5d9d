package podendpoint

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TriggerTimes computes the endpoints.kubernetes.io/last-change-trigger-time
// of Services' endpoints as Kubernetes does: the earliest time at which a
// change not yet published happened. A pod's change time is the last
// transition of its Ready condition; a Service's is its creation. It is
// safe for concurrent use; the zero value is ready.
type TriggerTimes struct {
	mu sync.Mutex
	// states holds, per Service key, the trigger times seen by the last
	// computation.
	states map[string]serviceState
}

type serviceState struct {
	pods    map[string]time.Time
	service time.Time
}

// Compute returns the trigger time of the endpoints of svc selecting
// pods, and remembers the state it saw: the Service's creation for a
// Service not seen before, else the earliest change time newer than the
// one last seen, or the zero time when nothing changed.
func (t *TriggerTimes) Compute(svc *corev1.Service, pods []*corev1.Pod) time.Time {
	key := svc.Namespace + "/" + svc.Name
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.states == nil {
		t.states = map[string]serviceState{}
	}
	old, known := t.states[key]
	now := serviceState{pods: map[string]time.Time{}, service: svc.CreationTimestamp.Time}
	var earliest time.Time
	consider := func(at time.Time) {
		if earliest.IsZero() || at.Before(earliest) {
			earliest = at
		}
	}
	for _, p := range pods {
		c := readyCondition(p)
		if c == nil || c.LastTransitionTime.IsZero() {
			continue
		}
		at := c.LastTransitionTime.Time
		now.pods[p.Name] = at
		if at.After(old.pods[p.Name]) {
			consider(at)
		}
	}
	if now.service.After(old.service) {
		consider(now.service)
	}
	t.states[key] = now
	if !known {
		return now.service
	}
	return earliest
}

// Forget drops what is remembered of the Service at key.
func (t *TriggerTimes) Forget(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.states, key)
}
