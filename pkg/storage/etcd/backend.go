package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/pkg/storage"
)

// Config configures a Backend. Give either Client or Endpoints.
type Config struct {
	// Client is an etcd client to use. The Backend does not close it.
	Client *clientv3.Client
	// Endpoints are the etcd client URLs to connect to when Client is nil;
	// the Backend then owns its client and closes it in Close.
	Endpoints []string
	// TLS secures the connection to Endpoints. Nil means plain text.
	TLS *tls.Config
	// DialTimeout bounds the first connection to Endpoints. Default 5s.
	DialTimeout time.Duration
	// Prefix is put before every key: "/pods/default/nginx" is stored at
	// "/registry/pods/default/nginx". Default "/registry". Several kplane
	// installations may share one etcd cluster under different prefixes.
	Prefix string
	// CompactionInterval is how often Run compacts etcd's history, keeping
	// roughly one interval of past revisions for watches and exact reads.
	// Default 5m; a negative value disables compaction.
	CompactionInterval time.Duration
	// WatchBufferSize is how many events a watcher may have waiting for its
	// reader. Default 100.
	WatchBufferSize int
	// SlowWatcherTimeout is how long a watcher's full buffer may stay full
	// before the watcher is closed with an Expired error, telling its reader
	// to relist. Default 5s.
	SlowWatcherTimeout time.Duration
	// Logger receives the Backend's and the etcd client's log. Default: discarded.
	Logger *slog.Logger
	// Clock drives compaction and slow watcher timeouts. Default: the real clock.
	Clock clock.WithTicker
}

// Backend is a storage.Backend on an etcd cluster. Every key lives at
// Prefix + key; an object's resourceVersion is the etcd revision that last
// modified it, so all resources share etcd's one revision.
//
// A Backend is safe for concurrent use; several Backends, in one process
// or many, may use the same etcd cluster and prefix at the same time.
type Backend struct {
	client    *clientv3.Client
	ownClient bool
	prefix    string
	cfg       Config
	logger    *slog.Logger

	// ctx ends when Close is called; every watch goroutine stops with it.
	ctx    context.Context
	cancel context.CancelFunc
	// watchers counts the running watch goroutines.
	watchers  sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

var _ storage.Backend = (*Backend)(nil)

// New returns a Backend. When cfg.Client is nil it creates a client for
// cfg.Endpoints (which the etcd client library connects in the background).
func New(cfg Config) (*Backend, error) {
	if cfg.Client == nil && len(cfg.Endpoints) == 0 {
		return nil, errors.New("etcd storage: Client or Endpoints is required")
	}
	if cfg.Client != nil && len(cfg.Endpoints) > 0 {
		return nil, errors.New("etcd storage: give Client or Endpoints, not both")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "/registry"
	}
	if !strings.HasPrefix(cfg.Prefix, "/") {
		return nil, fmt.Errorf("etcd storage: prefix %q must start with /", cfg.Prefix)
	}
	cfg.Prefix = strings.TrimRight(cfg.Prefix, "/")
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	if cfg.CompactionInterval == 0 {
		cfg.CompactionInterval = 5 * time.Minute
	}
	if cfg.WatchBufferSize <= 0 {
		cfg.WatchBufferSize = 100
	}
	if cfg.SlowWatcherTimeout <= 0 {
		cfg.SlowWatcherTimeout = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	b := &Backend{client: cfg.Client, prefix: cfg.Prefix, cfg: cfg, logger: cfg.Logger}
	if b.client == nil {
		c, err := clientv3.New(clientv3.Config{
			Endpoints:   cfg.Endpoints,
			TLS:         cfg.TLS,
			DialTimeout: cfg.DialTimeout,
			Logger:      newZapLogger(cfg.Logger, nil),
		})
		if err != nil {
			return nil, fmt.Errorf("etcd storage: connect to %v: %w", cfg.Endpoints, err)
		}
		b.client, b.ownClient = c, true
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	return b, nil
}

// Storage returns the store of one resource type. It never blocks.
func (b *Backend) Storage(cfg storage.ResourceConfig) (storage.Interface, error) {
	if cfg.Codec == nil || cfg.NewFunc == nil || cfg.NewListFunc == nil {
		return nil, errors.New("etcd storage: ResourceConfig needs Codec, NewFunc and NewListFunc")
	}
	if b.ctx.Err() != nil {
		return nil, errClosed
	}
	return &store{b: b, codec: cfg.Codec, newFunc: cfg.NewFunc, newListFunc: cfg.NewListFunc}, nil
}

// CurrentRevision returns etcd's current revision with a linearizable read:
// it is at least the revision of every write acknowledged before the call.
func (b *Backend) CurrentRevision(ctx context.Context) (uint64, error) {
	if b.ctx.Err() != nil {
		return 0, errClosed
	}
	resp, err := b.client.Get(ctx, b.prefix+"/", clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("etcd storage: current revision: %w", err)
	}
	return uint64(resp.Header.Revision), nil
}

// Client returns the etcd client the Backend uses. Do not close it.
func (b *Backend) Client() *clientv3.Client { return b.client }

// Prefix returns the prefix every key is stored under.
func (b *Backend) Prefix() string { return b.prefix }

// Close ends every open watch, waits for their goroutines, and closes the
// etcd client when the Backend created it. It is safe to call more than once.
func (b *Backend) Close() error {
	b.closeOnce.Do(func() {
		b.cancel()
		b.watchers.Wait()
		if b.ownClient {
			if err := b.client.Close(); err != nil && !errors.Is(err, context.Canceled) {
				b.closeErr = fmt.Errorf("etcd storage: close client: %w", err)
			}
		}
	})
	return b.closeErr
}

var errClosed = errors.New("etcd storage: backend is closed")

// Compact discards the history before revision rev: reads and watches
// from older revisions fail with storage.ErrCodeExpired afterwards.
// Compacting to a revision that is already compacted does nothing.
func (b *Backend) Compact(ctx context.Context, rev uint64) error {
	if b.ctx.Err() != nil {
		return errClosed
	}
	if _, err := b.client.Compact(ctx, int64(rev)); err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		return fmt.Errorf("etcd storage: compact to revision %d: %w", rev, err)
	}
	return nil
}

// RequestWatchProgress asks etcd to send every open watch of this
// Backend a progress notification now; watches opened with
// ProgressNotify turn it into a Bookmark at the current revision (a watch
// that still has events to deliver gets them first).
func (b *Backend) RequestWatchProgress(ctx context.Context) error {
	if b.ctx.Err() != nil {
		return errClosed
	}
	// Watches run on the stream of a require-leader context; the request
	// must travel on the same stream.
	if err := b.client.RequestProgress(clientv3.WithRequireLeader(ctx)); err != nil {
		return fmt.Errorf("etcd storage: request watch progress: %w", err)
	}
	return nil
}
