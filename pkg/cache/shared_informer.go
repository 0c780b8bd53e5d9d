package cache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
)

// InformerConfig configures a SharedIndexInformer. Zero fields get the
// documented defaults.
type InformerConfig[T Object] struct {
	// Name names the informer in logs. Default: the Go type of T.
	Name string
	// ListerWatcher reads the API. Required.
	ListerWatcher ListerWatcher[T]
	// Resource names the resource in the NotFound errors of the Lister.
	Resource schema.GroupResource
	// ResyncPeriod is the resync period of handlers registered without one.
	// 0 means no resync.
	ResyncPeriod time.Duration
	// Indexers are extra indexes of the store (NamespaceIndex is built in).
	Indexers Indexers[T]
	// Transform, if set, is applied to each object before it is stored or
	// handed to handlers, e.g. to drop managedFields and save memory.
	Transform func(T) (T, error)
	// DisableWatchList, PageSize, InitialBackoff and MaxBackoff are passed
	// to the Reflector (see ReflectorConfig).
	DisableWatchList bool
	PageSize         int64
	InitialBackoff   time.Duration
	MaxBackoff       time.Duration
	// TweakListOptions, if set, edits the options of every List and Watch
	// (label and field selectors).
	TweakListOptions func(*metav1.ListOptions)
	// Clock drives backoff and resync. Default: the real clock.
	Clock clock.WithTicker
	// Logger receives diagnostics. Default: slog.Default().
	Logger *slog.Logger
}

// HandlerOptions tunes one event handler.
type HandlerOptions struct {
	// ResyncPeriod, if positive, replays the whole cache to this handler as
	// OnUpdate(obj, obj) that often; 0 takes the informer's ResyncPeriod.
	// Periods are checked at the smallest period registered before Run, so
	// a shorter period given later is rounded up to it, and a handler added
	// after Run gets no resync if none was registered before.
	ResyncPeriod time.Duration
}

// SharedIndexInformer keeps an indexed cache of one resource up to date and
// tells any number of handlers about its changes. It is safe for concurrent
// use. Run it once.
//
// Flow: a Reflector lists and watches into a DeltaFIFO; one goroutine pops
// it, updates the Indexer and hands a notification to every handler's own
// queue (see the slow handler policy on AddEventHandler), so the cache
// always reflects at least what a handler is being told.
type SharedIndexInformer[T Object] struct {
	cfg     InformerConfig[T]
	indexer *Indexer[T]
	fifo    *DeltaFIFO[T]
	lister  *Lister[T]

	// mu guards the fields below, and is held while a key's deltas are
	// applied so that handlers registered meanwhile see a consistent cache.
	mu                sync.Mutex
	listeners         []*listener[T]
	syncing           map[*listener[T]]bool // listeners due for a resync
	started, stopped  bool
	listenerWG        sync.WaitGroup
	watchErrorHandler func(ctx context.Context, err error)
	resyncCheck       time.Duration
	reflector         atomic.Pointer[Reflector[T]] // set by Run
}

// NewSharedIndexInformer validates cfg and returns an informer; it starts
// nothing until Run.
func NewSharedIndexInformer[T Object](cfg InformerConfig[T]) (*SharedIndexInformer[T], error) {
	if cfg.ListerWatcher == nil {
		return nil, errors.New("informer: ListerWatcher is required")
	}
	if cfg.ResyncPeriod < 0 {
		return nil, errors.New("informer: negative ResyncPeriod")
	}
	if cfg.Name == "" {
		var zero T
		cfg.Name = fmt.Sprintf("%T", zero)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.Logger = cfg.Logger.With("informer", cfg.Name)
	indexer, err := NewIndexer(IndexerConfig[T]{Indexers: cfg.Indexers})
	if err != nil {
		return nil, fmt.Errorf("informer: %w", err)
	}
	fifo, err := NewDeltaFIFO(DeltaFIFOConfig[T]{KnownObjects: indexer, Transform: cfg.Transform})
	if err != nil {
		return nil, fmt.Errorf("informer: %w", err)
	}
	indexer.backlog = fifo.hasBacklog
	return &SharedIndexInformer[T]{
		cfg:     cfg,
		indexer: indexer,
		fifo:    fifo,
		lister:  NewLister(indexer, cfg.Resource),
		syncing: map[*listener[T]]bool{},
	}, nil
}

// Indexer returns the informer's cache. It is read-only for callers: only
// the informer writes to it.
func (s *SharedIndexInformer[T]) Indexer() *Indexer[T] { return s.indexer }

// Lister returns a Lister over the cache.
func (s *SharedIndexInformer[T]) Lister() *Lister[T] { return s.lister }

// HasSynced reports whether the initial list has been stored and handed to
// every handler's queue. Use a Registration's HasSynced to wait for a
// handler to have processed it.
func (s *SharedIndexInformer[T]) HasSynced() bool { return s.fifo.HasSynced() }

// LastSyncResourceVersion returns the resourceVersion the cache reflects,
// "" before Run.
func (s *SharedIndexInformer[T]) LastSyncResourceVersion() string {
	r := s.reflector.Load()
	if r == nil {
		return ""
	}
	return r.LastSyncResourceVersion()
}

// LastSyncError returns why the cache is not in step with the API: the
// error of the last failed list or watch, nil before Run and once a list has
// succeeded since (see Reflector.LastSyncError). An informer of a resource
// the server does not serve (yet) reports its NotFound here while it retries.
func (s *SharedIndexInformer[T]) LastSyncError() error {
	r := s.reflector.Load()
	if r == nil {
		return nil
	}
	return r.LastSyncError()
}

// SetWatchErrorHandler sets the function called with every list or watch
// error (see ReflectorConfig.WatchErrorHandler). It fails after Run.
func (s *SharedIndexInformer[T]) SetWatchErrorHandler(h func(ctx context.Context, err error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("informer: SetWatchErrorHandler after Run")
	}
	s.watchErrorHandler = h
	return nil
}

// IsStopped reports whether Run has returned or is returning.
func (s *SharedIndexInformer[T]) IsStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

// Registration is one handler's registration with an informer.
type Registration[T Object] struct {
	informer *SharedIndexInformer[T]
	l        *listener[T]
}

// HasSynced reports whether the informer has synced and this handler has
// processed every add of its initial content.
func (r *Registration[T]) HasSynced() bool {
	return r.informer.HasSynced() && r.l.initialDone()
}

// Pending returns how many notifications this handler has not finished
// handling, the call in progress included.
func (r *Registration[T]) Pending() int { return r.l.pending() }

// Remove unregisters the handler and drops what it had not yet been
// told: after Remove returns, at most the call in progress (or about to
// start) completes. It does not wait for that call, so a handler may remove
// itself. Removing twice is harmless.
func (r *Registration[T]) Remove() {
	s := r.informer
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, l := range s.listeners {
		if l == r.l {
			s.listeners = append(s.listeners[:i:i], s.listeners[i+1:]...)
			break
		}
	}
	delete(s.syncing, r.l)
	r.l.stop()
}

// AddEventHandler registers h. Each handler has its own goroutine and its
// own unbounded queue, so a slow handler never delays the informer or other
// handlers; it only accumulates a backlog, which is reported by
// Registration.Pending and logged as it doubles past 1024. Nothing is ever
// dropped. A handler registered after the informer has objects first gets a
// synthetic OnAdd(obj, true) for each of them. It fails after the informer
// stopped.
func (s *SharedIndexInformer[T]) AddEventHandler(h Handler[T], opts HandlerOptions) (*Registration[T], error) {
	if h == nil {
		return nil, errors.New("informer: nil handler")
	}
	if opts.ResyncPeriod < 0 {
		return nil, errors.New("informer: negative ResyncPeriod")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil, errors.New("informer: AddEventHandler after stop")
	}
	period := opts.ResyncPeriod
	if period == 0 {
		period = s.cfg.ResyncPeriod
	}
	if s.started && period > 0 && period < s.resyncCheck {
		period = s.resyncCheck
	}
	l := newListener(h, period, s.cfg.Logger)
	if period > 0 {
		l.nextResync = s.cfg.Clock.Now().Add(period)
	}
	s.listeners = append(s.listeners, l)
	// Synthetic adds of the current content, under mu so that no delta is
	// applied in between.
	s.indexer.Range(func(_ string, obj T) bool {
		l.add(context.Background(), notification[T]{kind: addNotification, initial: true, newObj: obj})
		return true
	})
	if s.started {
		s.listenerWG.Go(l.run)
	}
	return &Registration[T]{informer: s, l: l}, nil
}

// Run lists, watches and notifies handlers until ctx ends, then stops the
// handlers' goroutines (dropping what they had not processed) and returns
// once every goroutine it started has exited. A second Run returns at once.
func (s *SharedIndexInformer[T]) Run(ctx context.Context) {
	s.mu.Lock()
	if s.started || s.stopped {
		s.mu.Unlock()
		return
	}
	s.started = true
	check := time.Duration(0)
	for _, l := range s.listeners {
		if l.resyncPeriod > 0 && (check == 0 || l.resyncPeriod < check) {
			check = l.resyncPeriod
		}
	}
	if check == 0 {
		check = s.cfg.ResyncPeriod
	}
	s.resyncCheck = check
	r, err := NewReflector(ReflectorConfig[T]{
		Name:              s.cfg.Name,
		ListerWatcher:     s.cfg.ListerWatcher,
		Store:             s.fifo,
		PageSize:          s.cfg.PageSize,
		DisableWatchList:  s.cfg.DisableWatchList,
		ResyncPeriod:      check,
		ShouldResync:      s.shouldResync,
		InitialBackoff:    s.cfg.InitialBackoff,
		MaxBackoff:        s.cfg.MaxBackoff,
		Clock:             s.cfg.Clock,
		Logger:            s.cfg.Logger,
		WatchErrorHandler: s.watchErrorHandler,
		TweakListOptions:  s.cfg.TweakListOptions,
	})
	if err != nil {
		// The config was validated by NewSharedIndexInformer.
		s.stopped = true
		s.mu.Unlock()
		s.cfg.Logger.ErrorContext(ctx, "cannot build reflector", "err", err)
		return
	}
	s.reflector.Store(r)
	for _, l := range s.listeners {
		s.listenerWG.Go(l.run)
	}
	s.mu.Unlock()

	var wg sync.WaitGroup
	wg.Go(func() { r.Run(ctx) })
	wg.Go(func() { s.processLoop(ctx) })
	wg.Wait()

	s.mu.Lock()
	s.stopped = true
	for _, l := range s.listeners {
		l.stop()
	}
	s.mu.Unlock()
	s.listenerWG.Wait()
}

// maxBatch bounds how many keys the informer applies to its cache before
// telling handlers about them: larger batches publish fewer snapshots, smaller
// ones notify sooner.
const maxBatch = 256

func (s *SharedIndexInformer[T]) processLoop(ctx context.Context) {
	for {
		err := s.fifo.PopBatch(ctx, maxBatch, s.handleBatch)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			s.cfg.Logger.ErrorContext(ctx, "processing deltas failed", "err", err)
		}
	}
}

// shouldResync picks the handlers due for a resync.
func (s *SharedIndexInformer[T]) shouldResync() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Clock.Now()
	clear(s.syncing)
	for _, l := range s.listeners {
		if l.resyncPeriod > 0 && !now.Before(l.nextResync) {
			s.syncing[l] = true
			l.nextResync = now.Add(l.resyncPeriod)
		}
	}
	return len(s.syncing) > 0
}

// pendingNotification is a notification decided while applying a batch,
// sent once the batch is visible to readers.
type pendingNotification[T Object] struct {
	n    notification[T]
	sync bool // only for handlers due for a resync
}

// handleBatch applies a batch of keys' deltas to the cache as one snapshot,
// then notifies handlers in order, so a handler always finds in the cache
// at least what it is told about.
func (s *SharedIndexInformer[T]) handleBatch(batch []Popped[T]) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	var out []pendingNotification[T]
	s.indexer.Batch(func(w *IndexerWriter[T]) {
		for _, p := range batch {
			for _, d := range p.Deltas {
				switch d.Type {
				case Sync, Replaced, Added, Updated:
					old, exists := w.GetByKey(p.Key)
					if err := w.Put(d.Object); err != nil {
						errs = append(errs, err)
						continue
					}
					if !exists {
						out = append(out, pendingNotification[T]{n: notification[T]{
							kind: addNotification, initial: p.IsInInitialList, newObj: d.Object}})
						continue
					}
					// An update that does not change the resourceVersion (a
					// resync, or a relist finding the object unchanged) only
					// goes to the handlers due for a resync.
					out = append(out, pendingNotification[T]{
						n:    notification[T]{kind: updateNotification, oldObj: old, newObj: d.Object},
						sync: old.GetResourceVersion() == d.Object.GetResourceVersion(),
					})
				case Deleted:
					w.DeleteKey(p.Key)
					var obj any = d.Object
					if d.Tombstone != nil {
						obj = *d.Tombstone
					}
					out = append(out, pendingNotification[T]{n: notification[T]{kind: deleteNotification, deleted: obj}})
				}
			}
		}
	})
	ctx := context.Background()
	for _, l := range s.listeners {
		l.addBatch(ctx, out, s.syncing[l])
	}
	return errors.Join(errs...)
}
