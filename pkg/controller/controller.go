package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// DefaultMaxRetries is how many times a failing key is requeued with backoff
// before it is dropped. With the default per-item backoff (5ms doubling) the
// last retry comes about 80 seconds after the first failure.
const DefaultMaxRetries = 15

// DefaultCacheSyncPollInterval is how often Run checks whether the caches
// have synced.
const DefaultCacheSyncPollInterval = 100 * time.Millisecond

// SyncHandler reconciles the object named by key (usually "namespace/name")
// towards its desired state. It must be idempotent: it is called again for
// the same key whenever anything about it changes and after every error. A
// nil error forgets the key; an error requeues it with backoff, unless it is
// marked Terminal.
type SyncHandler func(ctx context.Context, key string) error

// Config configures New.
type Config struct {
	// Name names the controller in logs and metrics. Required.
	Name string
	// Queue feeds the workers. Required; the Controller shuts it down when
	// Run returns. A *workqueue.RateLimitingQueue or *workqueue.PriorityQueue
	// of strings will do.
	Queue Queue[string]
	// SyncHandler is called for every key taken from the queue. Required.
	SyncHandler SyncHandler
	// CacheSyncs are the HasSynced functions of the informers the handler
	// reads from, by a name for the logs (such as "pods"). Run starts no
	// worker before all of them report true.
	CacheSyncs map[string]InformerSynced
	// MaxRetries is how many times a failing key is requeued before it is
	// dropped. Defaults to DefaultMaxRetries; must not be negative. To never
	// retry a particular error, wrap it with Terminal.
	MaxRetries int
	// Clock times the handler and paces the cache-sync polling. Defaults to
	// the real clock.
	Clock clock.WithTicker
	// CacheSyncPollInterval defaults to DefaultCacheSyncPollInterval.
	CacheSyncPollInterval time.Duration
	// Logger is the base of the logger handed to the handler through the
	// context. Defaults to slog.Default().
	Logger *slog.Logger
	// Metrics receives the controller's measurements. Defaults to NoopMetrics.
	Metrics Metrics
}

// Controller runs a SyncHandler over the keys of a rate-limited queue with a
// fixed number of workers; see the package documentation for what happens to
// a key after each outcome.
//
// The Enqueue methods are safe for concurrent use and never block; they are
// meant for informer event handlers. Run may be called once.
type Controller struct {
	name         string
	queue        Queue[string]
	sync         SyncHandler
	cacheSyncs   map[string]InformerSynced
	maxRetries   int
	clock        clock.WithTicker
	pollInterval time.Duration
	logger       *slog.Logger
	metrics      Metrics

	// ran is set by the first Run; a queue that was shut down cannot be
	// run again.
	ran atomic.Bool
}

// New returns a Controller; it starts nothing until Run.
func New(cfg Config) (*Controller, error) {
	switch {
	case cfg.Name == "":
		return nil, errors.New("controller: name is required")
	case cfg.Queue == nil:
		return nil, errors.New("controller: queue is required")
	case cfg.SyncHandler == nil:
		return nil, errors.New("controller: sync handler is required")
	case cfg.MaxRetries < 0:
		return nil, errors.New("controller: max retries must not be negative")
	case cfg.CacheSyncPollInterval < 0:
		return nil, errors.New("controller: cache sync poll interval must not be negative")
	}
	for name, s := range cfg.CacheSyncs {
		if s == nil {
			return nil, fmt.Errorf("controller: cache sync %q is nil", name)
		}
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = DefaultMaxRetries
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.CacheSyncPollInterval == 0 {
		cfg.CacheSyncPollInterval = DefaultCacheSyncPollInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NoopMetrics{}
	}
	return &Controller{
		name:         cfg.Name,
		queue:        cfg.Queue,
		sync:         cfg.SyncHandler,
		cacheSyncs:   cfg.CacheSyncs,
		maxRetries:   cfg.MaxRetries,
		clock:        cfg.Clock,
		pollInterval: cfg.CacheSyncPollInterval,
		logger:       cfg.Logger.With("controller", cfg.Name),
		metrics:      cfg.Metrics,
	}, nil
}

// Name returns the controller's name.
func (c *Controller) Name() string { return c.name }

// Run waits for the caches to sync, starts workers workers and blocks until
// ctx is done. Then it shuts the queue down and returns only after every
// worker has finished its current key and exited. It returns an error,
// without starting any worker, if ctx ends before the caches sync; nil after
// a normal shutdown.
func (c *Controller) Run(ctx context.Context, workers int) error {
	if workers < 1 {
		return fmt.Errorf("controller %s: workers must be at least 1, got %d", c.name, workers)
	}
	if !c.ran.CompareAndSwap(false, true) {
		return fmt.Errorf("controller %s: Run called twice", c.name)
	}
	defer c.queue.ShutDown()

	c.logger.Info("starting controller", "workers", workers)
	defer c.logger.Info("controller stopped")
	if !c.waitForCacheSync(ctx) {
		return fmt.Errorf("controller %s: caches did not sync: %w", c.name, context.Cause(ctx))
	}

	c.metrics.SetMaxWorkers(c.name, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for c.processNextWorkItem(ctx) {
			}
		})
	}
	<-ctx.Done()
	c.logger.Info("shutting down workers")
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

// waitForCacheSync polls the CacheSyncs until all report true or ctx ends.
func (c *Controller) waitForCacheSync(ctx context.Context) bool {
	pending := func() []string {
		var names []string
		for name, s := range c.cacheSyncs {
			if !s() {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		return names
	}
	if len(pending()) == 0 {
		return true
	}
	c.logger.Info("waiting for caches to sync")
	t := c.clock.NewTicker(c.pollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			c.logger.Error("gave up waiting for caches to sync", "err", context.Cause(ctx), "unsynced", pending())
			return false
		case <-t.C():
			if len(pending()) == 0 {
				c.logger.Info("caches synced")
				return true
			}
		}
	}
}

// processNextWorkItem takes one key and handles it. It reports false when the
// worker should exit: the queue is shut down or ctx is done.
func (c *Controller) processNextWorkItem(ctx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	if ctx.Err() != nil {
		// Shutting down: leave what is queued rather than run the handler
		// with a context that is already cancelled.
		return false
	}
	err := c.reconcile(ctx, key)
	c.handleErr(key, err)
	return true
}

// reconcile runs the handler for key with a logger carrying the key in its
// context, recovering a panic into an error.
func (c *Controller) reconcile(ctx context.Context, key string) (err error) {
	logger := c.logger.With("key", key)
	ctx = WithLogger(ctx, logger)
	c.metrics.AddActiveWorkers(c.name, 1)
	start := c.clock.Now()
	defer func() {
		if r := recover(); r != nil {
			c.metrics.IncPanics(c.name)
			logger.Error("sync handler panicked", "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("panic in sync handler for key %q: %v", key, r)
		}
		result := ResultSuccess
		if err != nil {
			result = ResultError
		}
		c.metrics.ObserveReconcile(c.name, result, c.clock.Since(start))
		c.metrics.AddActiveWorkers(c.name, -1)
	}()
	return c.sync(ctx, key)
}

// handleErr decides what happens to key after its handler returned err.
// The caller calls Done.
func (c *Controller) handleErr(key string, err error) {
	if err == nil {
		c.queue.Forget(key)
		return
	}
	logger := c.logger.With("key", key)
	if IsTerminal(err) {
		c.metrics.IncTerminalErrors(c.name)
		logger.Error("sync failed with a terminal error, not retrying", "err", err)
		c.queue.Forget(key)
		return
	}
	if n := c.queue.NumRequeues(key); n < c.maxRetries {
		logger.Debug("sync failed, requeueing", "err", err, "requeues", n)
		c.queue.AddRateLimited(key)
		return
	}
	c.metrics.IncDropped(c.name)
	logger.Error("sync failed too many times, dropping key", "err", err, "retries", c.maxRetries)
	c.queue.Forget(key)
}
