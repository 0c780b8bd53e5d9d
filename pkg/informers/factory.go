package informers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
)

// Config configures a Factory. Zero fields get the documented defaults.
type Config struct {
	// Client is used by the typed accessors (Pods, Nodes...) and
	// ForResource. It may be nil when only For is used.
	Client *client.Client
	// Namespace restricts namespaced informers to one namespace; "" is all.
	Namespace string
	// ResyncPeriod is the default handler resync period of every informer;
	// 0 means none.
	ResyncPeriod time.Duration
	// TweakListOptions, if set, edits the options of every List and Watch
	// of every informer (label and field selectors).
	TweakListOptions func(*metav1.ListOptions)
	// DisableWatchList makes informers list instead of streaming their
	// initial state with a watch-list.
	DisableWatchList bool
	// Clock drives backoff and resync. Default: the real clock.
	Clock clock.WithTicker
	// Logger receives diagnostics. Default: slog.Default().
	Logger *slog.Logger
}

// informerKey names one informer of the factory: a resource may have one
// per object type, typed, unstructured and metadata-only side by side.
type informerKey struct {
	gvr schema.GroupVersionResource
	typ reflect.Type
}

// entry is one informer of the factory, seen without its type.
type entry struct {
	typ       reflect.Type
	informer  any // *cache.SharedIndexInformer[T] with T = typ
	run       func(ctx context.Context)
	hasSynced func() bool
	lastErr   func() error
	started   bool
}

// Factory keeps one informer per resource. It is safe for concurrent use.
type Factory struct {
	cfg Config

	mu        sync.Mutex
	informers map[informerKey]*entry // guarded by mu
	cancels   []context.CancelFunc   // one per Start; guarded by mu
	shutdown  bool                   // guarded by mu
	wg        sync.WaitGroup         // informer goroutines
}

// New returns a Factory; it starts nothing.
func New(cfg Config) (*Factory, error) {
	if cfg.ResyncPeriod < 0 {
		return nil, errors.New("informers: negative ResyncPeriod")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Factory{cfg: cfg, informers: map[informerKey]*entry{}}, nil
}

// For returns the factory's informer of objects of type T for gvr,
// creating it on first use with a ListerWatcher from newLW(namespace),
// where namespace is the factory's Namespace. A resource has at most one
// informer per object type, shared by every caller: a typed, an
// unstructured (ForDynamic) and a metadata-only (ForMetadata) one may run
// side by side. An informer created after Start runs at the next Start.
func For[T cache.Object](f *Factory, gvr schema.GroupVersionResource, newLW func(namespace string) cache.ListerWatcher[T]) (*cache.SharedIndexInformer[T], error) {
	key := informerKey{gvr: gvr, typ: reflect.TypeFor[T]()}
	f.mu.Lock()
	defer f.mu.Unlock()
	if e, ok := f.informers[key]; ok {
		return e.informer.(*cache.SharedIndexInformer[T]), nil
	}
	if newLW == nil {
		return nil, errors.New("informers: nil ListerWatcher constructor")
	}
	lw := newLW(f.cfg.Namespace)
	if lw == nil {
		return nil, fmt.Errorf("informers: no ListerWatcher for %s", gvr)
	}
	inf, err := cache.NewSharedIndexInformer(cache.InformerConfig[T]{
		Name:             gvr.String(),
		ListerWatcher:    lw,
		Resource:         gvr.GroupResource(),
		ResyncPeriod:     f.cfg.ResyncPeriod,
		DisableWatchList: f.cfg.DisableWatchList,
		TweakListOptions: f.cfg.TweakListOptions,
		Clock:            f.cfg.Clock,
		Logger:           f.cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("informers: %s: %w", gvr, err)
	}
	f.informers[key] = &entry{typ: key.typ, informer: inf, run: inf.Run, hasSynced: inf.HasSynced, lastErr: inf.LastSyncError}
	return inf, nil
}

// ForDynamic returns the factory's informer of gvr's objects as
// *unstructured.Unstructured, read through the dynamic client: any
// resource, custom resources included. It fails if the factory has no
// Client.
func ForDynamic(f *Factory, gvr schema.GroupVersionResource) (*cache.SharedIndexInformer[*unstructured.Unstructured], error) {
	if f.cfg.Client == nil {
		return nil, fmt.Errorf("informers: %s needs a Client", gvr)
	}
	d := client.NewDynamic(f.cfg.Client)
	return For(f, gvr, func(namespace string) cache.ListerWatcher[*unstructured.Unstructured] {
		return d.Resource(gvr).Namespace(namespace).ListerWatcher()
	})
}

// ForMetadata returns the factory's informer of the metadata of gvr's
// objects (*metav1.PartialObjectMetadata), for controllers that need no
// more, as the garbage collector. It fails if the factory has no Client.
func ForMetadata(f *Factory, gvr schema.GroupVersionResource) (*cache.SharedIndexInformer[*metav1.PartialObjectMetadata], error) {
	if f.cfg.Client == nil {
		return nil, fmt.Errorf("informers: %s needs a Client", gvr)
	}
	m := client.NewMetadata(f.cfg.Client)
	return For(f, gvr, func(namespace string) cache.ListerWatcher[*metav1.PartialObjectMetadata] {
		return m.Resource(gvr).Namespace(namespace).ListerWatcher()
	})
}

// ForResource returns the informer of a resource read through the factory's
// Client. It fails if the factory has no Client.
func ForResource[T cache.Object](f *Factory, res client.Resource[T]) (*cache.SharedIndexInformer[T], error) {
	if f.cfg.Client == nil {
		return nil, fmt.Errorf("informers: %s needs a Client", res.GroupVersionResource)
	}
	c := f.cfg.Client
	return For(f, res.GroupVersionResource, func(namespace string) cache.ListerWatcher[T] {
		return client.NewResource(c, res).Namespace(namespace)
	})
}

// Start runs, until ctx ends or Shutdown, every informer not started yet.
// It does not block. After Shutdown it does nothing.
func (f *Factory) Start(ctx context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shutdown {
		return
	}
	var ctxStart context.Context
	for _, e := range f.informers {
		if e.started {
			continue
		}
		if ctxStart == nil {
			var cancel context.CancelFunc
			ctxStart, cancel = context.WithCancel(ctx)
			f.cancels = append(f.cancels, cancel)
		}
		e.started = true
		run := e.run
		f.wg.Go(func() { run(ctxStart) })
	}
}

// WaitForCacheSync blocks until every started informer has synced or ctx
// ends, and reports for each resource whether its informers synced.
func (f *Factory) WaitForCacheSync(ctx context.Context) map[schema.GroupVersionResource]bool {
	f.mu.Lock()
	started := map[schema.GroupVersionResource][]func() bool{}
	for key, e := range f.informers {
		if e.started {
			started[key.gvr] = append(started[key.gvr], e.hasSynced)
		}
	}
	f.mu.Unlock()
	out := make(map[schema.GroupVersionResource]bool, len(started))
	for gvr, synced := range started {
		out[gvr] = cache.WaitForCacheSync(ctx, synced...)
	}
	return out
}

// NotSynced reports the started informers that have not synced, by
// resource, each with why: the error of its last failed list or watch (for
// instance a NotFound while a custom resource's CRD is not installed), or
// nil while its first list is under way. Informers retry with backoff until
// they sync; this is what to log when waiting takes long.
func (f *Factory) NotSynced() map[schema.GroupVersionResource]error {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[schema.GroupVersionResource]error{}
	for key, e := range f.informers {
		if e.started && !e.hasSynced() {
			if err := e.lastErr(); err != nil || out[key.gvr] == nil {
				out[key.gvr] = err
			}
		}
	}
	return out
}

// Shutdown stops every informer and waits until all their goroutines have
// exited. It is idempotent; the factory starts nothing afterwards.
func (f *Factory) Shutdown() {
	f.mu.Lock()
	f.shutdown = true
	cancels := f.cancels
	f.cancels = nil
	f.mu.Unlock()
	for _, cancel := range cancels {
		cancel()
	}
	f.wg.Wait()
}

// WaitForNamedCacheSync is the cache-sync gate of controllers: it blocks
// until every synced function reports true or ctx ends, logs the outcome
// under name, and reports whether all synced.
func WaitForNamedCacheSync(ctx context.Context, name string, synced ...func() bool) bool {
	logger := slog.Default().With("controller", name)
	logger.InfoContext(ctx, "waiting for caches to sync")
	if !cache.WaitForCacheSync(ctx, synced...) {
		logger.ErrorContext(ctx, "caches did not sync", "err", ctx.Err())
		return false
	}
	logger.InfoContext(ctx, "caches are synced")
	return true
}
