package record

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Defaults of Config.
const (
	// DefaultBufferSize bounds the events waiting to be written.
	DefaultBufferSize = 1000
	// DefaultBurst and DefaultQPS are the per-object token bucket: 25 events
	// at once, then one every 5 minutes.
	DefaultBurst = 25
	DefaultQPS   = 1.0 / 300
	// DefaultCacheSize bounds the remembered events (for aggregation) and
	// the per-object rate limiters; the least recently used are forgotten.
	DefaultCacheSize = 4096
	// DefaultMaxTries is how many times a write is attempted.
	DefaultMaxTries = 3
	// DefaultRetryInterval is the wait between attempts.
	DefaultRetryInterval = 10 * time.Second
)

// Object is what events are recorded about.
type Object interface {
	metav1.Object
	runtime.Object
}

// Config configures New.
type Config struct {
	// Sink writes the events. Required.
	Sink Sink
	// Component names the reporter: source.component and
	// reportingController of every event. Required.
	Component string
	// Host is source.host and reportingInstance, such as the node or pod
	// name. Optional.
	Host string
	// Scheme finds the kind of an object whose TypeMeta is empty, as typed
	// objects from a client usually are. Defaults to a scheme with core/v1,
	// apps/v1 and coordination.k8s.io/v1.
	Scheme *runtime.Scheme
	// Clock stamps events, refills the rate limiters and spaces retries.
	// Defaults to the real clock.
	Clock clock.WithTicker
	// BufferSize bounds the events waiting to be written; when it is full
	// Event drops. Defaults to DefaultBufferSize.
	BufferSize int
	// QPS and Burst set the per-object token bucket. Default to DefaultQPS
	// and DefaultBurst. A negative QPS turns rate limiting off.
	QPS   float64
	Burst int
	// CacheSize bounds the remembered events and rate limiters. Defaults to
	// DefaultCacheSize.
	CacheSize int
	// MaxTries and RetryInterval govern failed writes. Default to
	// DefaultMaxTries and DefaultRetryInterval.
	MaxTries      int
	RetryInterval time.Duration
	// Logger receives dropped and failed events. Defaults to slog.Default().
	Logger *slog.Logger
}

// Stats counts what happened to the events given to a Recorder.
type Stats struct {
	// Written events were created or patched.
	Written uint64
	// Dropped events found the buffer full (or had an invalid type or an
	// object whose kind is unknown) and were never looked at again.
	Dropped uint64
	// RateLimited events were held back by their object's token bucket;
	// repeats among them still count in the next patch that gets through.
	RateLimited uint64
	// Failed events could not be written in MaxTries attempts.
	Failed uint64
}

// Recorder records Events. Event and Eventf are safe for concurrent use and
// never block. Run drains the buffer; call it once.
type Recorder struct {
	sink          Sink
	source        corev1.EventSource
	scheme        *runtime.Scheme
	clock         clock.WithTicker
	limit         rate.Limit
	burst         int
	maxTries      int
	retryInterval time.Duration
	logger        *slog.Logger

	// incoming holds events between Event and Run. Its capacity is
	// BufferSize so callers never wait on the API server; a full buffer
	// drops, and the drop is counted.
	incoming chan *corev1.Event

	written, dropped, rateLimited, failed atomic.Uint64
	ran                                   atomic.Bool

	// The fields below belong to the Run goroutine.

	// seen remembers the events written, for aggregation.
	seen *lru[aggregateKey, seenEvent]
	// limiters holds one token bucket per involved object.
	limiters *lru[objectKey, *rate.Limiter]
	// lastName is the UnixNano of the last event name handed out, kept
	// strictly increasing so two events in the same instant get different
	// names.
	lastName int64
}

// aggregateKey identifies repeats of one event.
type aggregateKey struct {
	object                 objectKey
	component, host        string
	eventType, reason, msg string
}

// objectKey identifies an involved object.
type objectKey struct {
	apiVersion, kind, namespace, name string
	uid                               types.UID
}

// seenEvent is what is remembered of a written event.
type seenEvent struct {
	namespace, name string
	count           int32
	first           metav1.Time
}

// New returns a Recorder; it writes nothing until Run.
func New(cfg Config) (*Recorder, error) {
	switch {
	case cfg.Sink == nil:
		return nil, errors.New("record: sink is required")
	case cfg.Component == "":
		return nil, errors.New("record: component is required")
	case cfg.BufferSize < 0, cfg.Burst < 0, cfg.CacheSize < 0, cfg.MaxTries < 0, cfg.RetryInterval < 0:
		return nil, errors.New("record: sizes, tries and intervals must not be negative")
	}
	if cfg.Scheme == nil {
		cfg.Scheme = runtime.NewScheme()
		for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, coordinationv1.AddToScheme} {
			if err := add(cfg.Scheme); err != nil {
				return nil, fmt.Errorf("record: build scheme: %w", err)
			}
		}
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.BufferSize == 0 {
		cfg.BufferSize = DefaultBufferSize
	}
	if cfg.QPS == 0 {
		cfg.QPS = DefaultQPS
	}
	limit := rate.Limit(cfg.QPS)
	if cfg.QPS < 0 {
		limit = rate.Inf
	}
	if cfg.Burst == 0 {
		cfg.Burst = DefaultBurst
	}
	if cfg.CacheSize == 0 {
		cfg.CacheSize = DefaultCacheSize
	}
	if cfg.MaxTries == 0 {
		cfg.MaxTries = DefaultMaxTries
	}
	if cfg.RetryInterval == 0 {
		cfg.RetryInterval = DefaultRetryInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Recorder{
		sink:          cfg.Sink,
		source:        corev1.EventSource{Component: cfg.Component, Host: cfg.Host},
		scheme:        cfg.Scheme,
		clock:         cfg.Clock,
		limit:         limit,
		burst:         cfg.Burst,
		maxTries:      cfg.MaxTries,
		retryInterval: cfg.RetryInterval,
		logger:        cfg.Logger.With("component", cfg.Component),
		incoming:      make(chan *corev1.Event, cfg.BufferSize),
		seen:          newLRU[aggregateKey, seenEvent](cfg.CacheSize),
		limiters:      newLRU[objectKey, *rate.Limiter](cfg.CacheSize),
	}, nil
}

// Event records an event of eventType (corev1.EventTypeNormal or
// corev1.EventTypeWarning) about obj. reason is a short UpperCamelCase
// machine-readable cause; message is for humans. It never blocks: when the
// buffer is full the event is dropped and counted.
func (r *Recorder) Event(obj Object, eventType, reason, message string) {
	if obj == nil || reflect.ValueOf(obj).Kind() == reflect.Pointer && reflect.ValueOf(obj).IsNil() {
		r.dropped.Add(1)
		r.logger.Error("dropping event about a nil object", "reason", reason)
		return
	}
	if eventType != corev1.EventTypeNormal && eventType != corev1.EventTypeWarning {
		r.dropped.Add(1)
		r.logger.Error("dropping event with an unsupported type", "type", eventType, "reason", reason)
		return
	}
	ref, err := r.reference(obj)
	if err != nil {
		r.dropped.Add(1)
		r.logger.Error("dropping event about an object of unknown kind", "err", err, "reason", reason)
		return
	}
	now := metav1.NewTime(r.clock.Now())
	ev := &corev1.Event{
		ObjectMeta:          metav1.ObjectMeta{Namespace: ref.Namespace},
		InvolvedObject:      ref,
		Reason:              reason,
		Message:             message,
		Source:              r.source,
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		Type:                eventType,
		ReportingController: r.source.Component,
		ReportingInstance:   r.source.Host,
	}
	if ev.Namespace == "" {
		ev.Namespace = metav1.NamespaceDefault
	}
	select {
	case r.incoming <- ev:
	default:
		// Logged at the 1st, 2nd, 4th, 8th... drop, so that a flood of
		// events does not become a flood of logs.
		if n := r.dropped.Add(1); n&(n-1) == 0 {
			r.logger.Warn("event buffer full, dropping events", "dropped", n, "object", ref.Namespace+"/"+ref.Name, "reason", reason)
		}
	}
}

// Eventf is Event with a formatted message.
func (r *Recorder) Eventf(obj Object, eventType, reason, format string, args ...any) {
	r.Event(obj, eventType, reason, fmt.Sprintf(format, args...))
}

// Stats returns the counts so far.
func (r *Recorder) Stats() Stats {
	return Stats{
		Written:     r.written.Load(),
		Dropped:     r.dropped.Load(),
		RateLimited: r.rateLimited.Load(),
		Failed:      r.failed.Load(),
	}
}

// reference builds the involvedObject of an event about obj.
func (r *Recorder) reference(obj Object) (corev1.ObjectReference, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" || gvk.Version == "" {
		kinds, _, err := r.scheme.ObjectKinds(obj)
		if err != nil {
			return corev1.ObjectReference{}, err
		}
		gvk = kinds[0]
	}
	return corev1.ObjectReference{
		APIVersion:      gvk.GroupVersion().String(),
		Kind:            gvk.Kind,
		Namespace:       obj.GetNamespace(),
		Name:            obj.GetName(),
		UID:             obj.GetUID(),
		ResourceVersion: obj.GetResourceVersion(),
	}, nil
}

// Run writes the buffered events until ctx is done, then returns. Events
// still buffered then are not written. It may be called once.
func (r *Recorder) Run(ctx context.Context) error {
	if !r.ran.CompareAndSwap(false, true) {
		return errors.New("record: Run called twice")
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-r.incoming:
			r.process(ctx, ev)
		}
	}
}

// process aggregates, rate-limits and writes one event.
func (r *Recorder) process(ctx context.Context, ev *corev1.Event) {
	obj := objectKey{
		apiVersion: ev.InvolvedObject.APIVersion, kind: ev.InvolvedObject.Kind,
		namespace: ev.InvolvedObject.Namespace, name: ev.InvolvedObject.Name, uid: ev.InvolvedObject.UID,
	}
	key := aggregateKey{
		object: obj, component: ev.Source.Component, host: ev.Source.Host,
		eventType: ev.Type, reason: ev.Reason, msg: ev.Message,
	}

	// Count the repeat before the rate limit decides, so a patch that gets
	// through later carries every occurrence.
	prev, repeat := r.seen.get(key)
	if repeat {
		prev.count++
		r.seen.put(key, prev)
	}

	lim, ok := r.limiters.get(obj)
	if !ok {
		lim = rate.NewLimiter(r.limit, r.burst)
		r.limiters.put(obj, lim)
	}
	if !lim.AllowN(r.clock.Now(), 1) {
		r.rateLimited.Add(1)
		return
	}

	if repeat {
		ev.Namespace, ev.Name = prev.namespace, prev.name
		ev.Count = prev.count
		ev.FirstTimestamp = prev.first
	} else {
		ev.Name = r.eventName(ev.InvolvedObject.Name)
		r.seen.put(key, seenEvent{namespace: ev.Namespace, name: ev.Name, count: 1, first: ev.FirstTimestamp})
	}
	if r.write(ctx, ev, repeat) {
		r.written.Add(1)
		return
	}
	r.failed.Add(1)
}

// eventName returns a name for a new event about the object called name,
// unique among this Recorder's events.
func (r *Recorder) eventName(name string) string {
	n := r.clock.Now().UnixNano()
	if n <= r.lastName {
		n = r.lastName + 1
	}
	r.lastName = n
	return name + "." + strconv.FormatInt(n, 16)
}

// write creates ev, or patches the existing event for a repeat (creating it
// if it has vanished), trying up to maxTries times.
func (r *Recorder) write(ctx context.Context, ev *corev1.Event, repeat bool) bool {
	for try := 1; ; try++ {
		err := r.writeOnce(ctx, ev, repeat)
		switch {
		case err == nil:
			return true
		case apierrors.IsAlreadyExists(err):
			// Written already, by an earlier try whose answer was lost.
			return true
		case apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsForbidden(err):
			r.logger.Error("event rejected, not retrying", "err", err, "event", ev.Name, "reason", ev.Reason)
			return false
		case try >= r.maxTries || ctx.Err() != nil:
			r.logger.Error("could not write event", "err", err, "event", ev.Name, "reason", ev.Reason, "tries", try)
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-r.clock.After(r.retryInterval):
		}
	}
}

func (r *Recorder) writeOnce(ctx context.Context, ev *corev1.Event, repeat bool) error {
	if repeat {
		patch, err := json.Marshal(map[string]any{
			"count":         ev.Count,
			"lastTimestamp": ev.LastTimestamp,
			"message":       ev.Message,
		})
		if err != nil {
			return err
		}
		_, err = r.sink.Patch(ctx, ev.Namespace, ev.Name, types.StrategicMergePatchType, patch)
		if !apierrors.IsNotFound(err) {
			return err
		}
		// The event was deleted (events expire): record it afresh under
		// the same name, keeping its count.
	}
	_, err := r.sink.Create(ctx, ev)
	return err
}
