package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Config configures an Auditor. Policy and Sink are required.
type Config struct {
	// Policy decides what is recorded. The Auditor reads it, never
	// changes it; the caller must not change it afterwards either.
	Policy *Policy
	// Sink receives one JSON Event per line, one Write per Event, under
	// the Auditor's lock. The Auditor does not close it.
	Sink io.Writer
	// Clock stamps events. Default the real clock.
	Clock clock.PassiveClock
	// Logger receives the errors of writing to Sink (events are not
	// retried). Default: discarded.
	Logger *slog.Logger
}

// Auditor evaluates the Policy for requests and writes their events. It is
// safe for concurrent use.
type Auditor struct {
	policy *Policy
	clock  clock.PassiveClock
	log    *slog.Logger

	mu   sync.Mutex // serializes writes to sink
	sink io.Writer
}

// New returns an Auditor for cfg.
func New(cfg Config) (*Auditor, error) {
	if cfg.Policy == nil {
		return nil, errors.New("audit: Policy is required")
	}
	if cfg.Sink == nil {
		return nil, errors.New("audit: Sink is required")
	}
	if err := cfg.Policy.Validate(); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Auditor{policy: cfg.Policy, clock: cfg.Clock, log: cfg.Logger, sink: cfg.Sink}, nil
}

// Evaluate returns the policy's decision for a request.
func (a *Auditor) Evaluate(attrs Attributes) RequestConfig { return a.policy.Evaluate(attrs) }

// Clock returns the clock events are stamped with.
func (a *Auditor) Clock() clock.PassiveClock { return a.clock }

// Write records ev at its Stage, stamping StageTimestamp, unless the
// level is None. It sets Kind and APIVersion. Errors are logged, not
// returned: a request is not failed because its record could not be
// written.
func (a *Auditor) Write(ev *Event) {
	if ev.Level == LevelNone || ev.Level == "" {
		return
	}
	ev.Kind, ev.APIVersion = "Event", APIVersion
	ev.StageTimestamp.Time = a.clock.Now()
	data, err := json.Marshal(ev)
	if err != nil {
		a.log.Error("audit: encode event", "auditID", ev.AuditID, "err", err)
		return
	}
	data = append(data, '\n')
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := a.sink.Write(data); err != nil {
		a.log.Error("audit: write event", "auditID", ev.AuditID, "err", err)
	}
}

type eventKey struct{}
type idKey struct{}

// entry is a request's event with the lock that guards the fields filters
// may set while the event is being written (Annotations, ImpersonatedUser).
type entry struct {
	mu sync.Mutex
	ev *Event
}

// WithEvent returns a context carrying the request's event, so that later
// filters (impersonation, authorization) can add to it with AddAnnotation
// and LogImpersonatedUser. Read it back with Snapshot.
func WithEvent(ctx context.Context, ev *Event) context.Context {
	return context.WithValue(ctx, eventKey{}, &entry{ev: ev})
}

// WithAuditID returns a context carrying the request's audit ID.
func WithAuditID(ctx context.Context, id types.UID) context.Context {
	return context.WithValue(ctx, idKey{}, id)
}

// AuditIDFrom returns the audit ID of the request ctx belongs to, or "".
func AuditIDFrom(ctx context.Context) types.UID {
	id, _ := ctx.Value(idKey{}).(types.UID)
	return id
}

// AddAnnotation records key=value in the event of the request ctx belongs
// to (such as authorization.k8s.io/decision), if it is audited. An
// existing key keeps its first value.
func AddAnnotation(ctx context.Context, key, value string) {
	update(ctx, func(ev *Event) {
		if _, ok := ev.Annotations[key]; ok {
			return
		}
		if ev.Annotations == nil {
			ev.Annotations = map[string]string{}
		}
		ev.Annotations[key] = value
	})
}

// LogImpersonatedUser records, in the event of the request ctx belongs to,
// the user the requester acts as.
func LogImpersonatedUser(ctx context.Context, u UserInfo) {
	update(ctx, func(ev *Event) { ev.ImpersonatedUser = &u })
}

// LogRequestObject completes the objectRef of the event of the request
// ctx belongs to with the decoded request object's namespace, name, uid and
// resourceVersion, where the URL did not name them (a create's object
// name, an update's resourceVersion), as kube-apiserver records them at
// every level from Metadata. The objectRef is replaced, not changed in
// place: events already written may share the old one.
func LogRequestObject(ctx context.Context, obj metav1.Object) {
	if obj == nil {
		return
	}
	update(ctx, func(ev *Event) {
		if ev.ObjectRef == nil {
			return
		}
		ref := *ev.ObjectRef
		if ref.Namespace == "" {
			ref.Namespace = obj.GetNamespace()
		}
		if ref.Name == "" {
			ref.Name = obj.GetName()
		}
		if ref.UID == "" {
			ref.UID = obj.GetUID()
		}
		if ref.ResourceVersion == "" {
			ref.ResourceVersion = obj.GetResourceVersion()
		}
		ev.ObjectRef = &ref
	})
}

// Snapshot returns a copy of the event ctx carries (nil if none), with
// edit applied under the event's lock: the caller may then write the copy
// while filters still add to the original.
func Snapshot(ctx context.Context, edit func(*Event)) *Event {
	var c *Event
	update(ctx, func(ev *Event) {
		if edit != nil {
			edit(ev)
		}
		cp := *ev
		cp.Annotations = maps.Clone(ev.Annotations)
		c = &cp
	})
	return c
}

// update runs edit on the event of the request ctx belongs to, under the
// event's lock; it does nothing when the request is not audited.
func update(ctx context.Context, edit func(*Event)) {
	e, _ := ctx.Value(eventKey{}).(*entry)
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	edit(e.ev)
}

// StripManagedFields returns obj, a JSON object or list, without
// metadata.managedFields (of the object or of each list item). What is not
// a JSON object is returned unchanged.
func StripManagedFields(obj json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(obj, &m); err != nil {
		return obj
	}
	changed := stripMeta(m)
	if raw, ok := m["items"]; ok {
		var items []map[string]json.RawMessage
		if json.Unmarshal(raw, &items) == nil {
			itemsChanged := false
			for _, it := range items {
				if stripMeta(it) {
					itemsChanged = true
				}
			}
			if itemsChanged {
				if data, err := json.Marshal(items); err == nil {
					m["items"], changed = data, true
				}
			}
		}
	}
	if !changed {
		return obj
	}
	data, err := json.Marshal(m)
	if err != nil {
		return obj
	}
	return data
}

// stripMeta drops metadata.managedFields from m, reporting a change.
func stripMeta(m map[string]json.RawMessage) bool {
	raw, ok := m["metadata"]
	if !ok {
		return false
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(raw, &meta) != nil {
		return false
	}
	if _, ok := meta["managedFields"]; !ok {
		return false
	}
	delete(meta, "managedFields")
	data, err := json.Marshal(meta)
	if err != nil {
		return false
	}
	m["metadata"] = data
	return true
}
