package cacher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/pkg/storage"
)

// KeyFunc returns the key an object is stored at, given the root of its
// resource ("/pods").
type KeyFunc func(root string, obj runtime.Object) (string, error)

// Config configures a Cacher.
type Config struct {
	// Backend is the storage the Cacher reads through to and writes to.
	// Required. The Cacher does not close it.
	Backend storage.Backend
	// KeyFunc maps an object to its key. Default: root/namespace/name for
	// namespaced objects and root/name for cluster-scoped ones, the layout
	// of kplane's registry ("/pods/default/nginx", "/nodes/node-1").
	KeyFunc KeyFunc
	// WindowSize is how many recent events each resource keeps for watches
	// that start from a past resourceVersion. Default 4096.
	WindowSize int
	// WatchBufferSize is how many events a watcher may have waiting for its
	// reader. A watcher whose buffer is full when an event arrives is closed
	// with an Expired error event (its reader relists); the cache never
	// waits for a watcher. Default 1000.
	WatchBufferSize int
	// ConsistentReadTimeout bounds how long a consistent read waits for the
	// cache to catch up with the backend's current revision before it is
	// served by the backend instead. Default 3s.
	ConsistentReadTimeout time.Duration
	// BookmarkInterval is how often, while some watcher asked for
	// bookmarks, the cache asks a backend that can (see
	// storagetest.ProgressRequester) for one, so that bookmarks flow while
	// the watched keys are idle. Default 10s.
	BookmarkInterval time.Duration
	// MinRetryDelay and MaxRetryDelay bound the wait before a resource's
	// cache relists after its backend watch failed. Defaults 100ms and 10s.
	MinRetryDelay, MaxRetryDelay time.Duration
	// Logger receives the Cacher's log. Default: discarded.
	Logger *slog.Logger
	// Clock drives timeouts and retries. Default: the real clock.
	Clock clock.WithTicker
}

// Cacher is a storage.Backend that serves reads and watches of another
// Backend from memory. See the package documentation for what it
// guarantees. It is safe for concurrent use.
type Cacher struct {
	backend storage.Backend
	cfg     Config
	logger  *slog.Logger

	// ctx ends when Close is called; every cache and watcher goroutine
	// stops with it, and wg counts them.
	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
	// mu guards closed, so that no goroutine starts once Close waits,
	// and caches, every resource cache started so far.
	mu     sync.Mutex
	closed bool
	caches []*cache
}

var _ storage.Backend = (*Cacher)(nil)

// New returns a Cacher in front of cfg.Backend. It starts no goroutines:
// each resource's cache starts with the first read or watch of it.
func New(cfg Config) (*Cacher, error) {
	if cfg.Backend == nil {
		return nil, errors.New("cacher: Backend is required")
	}
	if cfg.KeyFunc == nil {
		cfg.KeyFunc = DefaultKeyFunc
	}
	if cfg.WindowSize <= 0 {
		cfg.WindowSize = 4096
	}
	if cfg.WatchBufferSize <= 0 {
		cfg.WatchBufferSize = 1000
	}
	if cfg.ConsistentReadTimeout <= 0 {
		cfg.ConsistentReadTimeout = 3 * time.Second
	}
	if cfg.BookmarkInterval <= 0 {
		cfg.BookmarkInterval = 10 * time.Second
	}
	if cfg.MinRetryDelay <= 0 {
		cfg.MinRetryDelay = 100 * time.Millisecond
	}
	if cfg.MaxRetryDelay < cfg.MinRetryDelay {
		cfg.MaxRetryDelay = max(10*time.Second, cfg.MinRetryDelay)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	c := &Cacher{backend: cfg.Backend, cfg: cfg, logger: cfg.Logger}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c, nil
}

// DefaultKeyFunc is the default Config.KeyFunc.
func DefaultKeyFunc(root string, obj runtime.Object) (string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", err
	}
	if m.GetName() == "" {
		return "", fmt.Errorf("cacher: object %T has no name", obj)
	}
	if ns := m.GetNamespace(); ns != "" {
		return root + "/" + ns + "/" + m.GetName(), nil
	}
	return root + "/" + m.GetName(), nil
}

// Storage returns the cached store of one resource type. It starts nothing.
func (c *Cacher) Storage(cfg storage.ResourceConfig) (storage.Interface, error) {
	if c.ctx.Err() != nil {
		return nil, errClosed
	}
	inner, err := c.backend.Storage(cfg)
	if err != nil {
		return nil, err
	}
	return &store{c: c, inner: inner, rc: cfg, caches: map[string]*cache{}}, nil
}

// CurrentRevision returns the backend's current revision.
func (c *Cacher) CurrentRevision(ctx context.Context) (uint64, error) {
	return c.backend.CurrentRevision(ctx)
}

// Close stops every cache and ends every watch it serves, waiting for
// their goroutines. It does not close the backend. It is safe to call
// more than once.
func (c *Cacher) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		c.cancel()
		c.wg.Wait()
	})
	return nil
}

var errClosed = errors.New("cacher: closed")

// spawn runs f in a goroutine that Close waits for; it reports false,
// running nothing, once the Cacher is closed.
func (c *Cacher) spawn(f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Go(f)
	return true
}

// Compact compacts the backend when it can (storage.Backend
// implementations such as the etcd and memory backends do) and stops the
// caches from serving watches from before rev.
func (c *Cacher) Compact(ctx context.Context, rev uint64) error {
	bc, ok := c.backend.(compactor)
	if !ok {
		return errors.New("cacher: the backend cannot compact")
	}
	if err := bc.Compact(ctx, rev); err != nil {
		return err
	}
	for _, rc := range c.allCaches() {
		rc.compactedTo(rev)
	}
	return nil
}

// RequestWatchProgress sends every watch opened with ProgressNotify a
// Bookmark at a revision at least as new as the backend's current one,
// once its cache has caught up (or a Bookmark at the cache's revision when
// it cannot within ConsistentReadTimeout).
func (c *Cacher) RequestWatchProgress(ctx context.Context) error {
	for _, rc := range c.allCaches() {
		if err := rc.waitConsistent(ctx); err != nil && !errors.Is(err, errNotFresh) {
			return err
		}
		rc.progressBookmark()
	}
	return nil
}

func (c *Cacher) allCaches() []*cache {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*cache(nil), c.caches...)
}

func (c *Cacher) addCache(rc *cache) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.caches = append(c.caches, rc)
}
