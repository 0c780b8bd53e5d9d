package memory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/btree"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/pkg/storage"
)

// ErrClosed is returned by every operation on a closed Backend.
var ErrClosed = errors.New("memory storage: backend is closed")

// Defaults for the zero fields of Config.
const (
	DefaultHistoryRevisions       = 10000
	DefaultHistoryDuration        = 5 * time.Minute
	DefaultWatchBufferSize        = 100
	DefaultProgressNotifyInterval = time.Minute
)

// Config configures a Backend. Zero fields take the documented defaults.
type Config struct {
	// Clock reads the time for duration-based compaction and drives
	// progress-notify bookmarks. Default: the real clock.
	Clock clock.WithTicker
	// Logger receives the backend's logs (closed slow watchers). Default: discards.
	Logger *slog.Logger
	// HistoryRevisions is how many of the newest revisions stay readable by
	// exact lists, continue tokens and watches. Default 10000.
	HistoryRevisions int
	// HistoryDuration is how long a revision stays readable at most; older
	// revisions are compacted at the next write. Default 5 minutes, the
	// interval at which kube-apiserver compacts etcd.
	HistoryDuration time.Duration
	// WatchBufferSize is the capacity of each watcher's ResultChan. It lets
	// a consumer take events in bursts; it does not bound how far a watcher
	// may lag (the history does). Default 100.
	WatchBufferSize int
	// ProgressNotifyInterval is how often a watch opened with ProgressNotify
	// sends a Bookmark. Default 1 minute.
	ProgressNotifyInterval time.Duration
	// DisableDecodedCache makes every read decode the stored bytes. By
	// default a key that is read (Get, GetList, a watch's initial events)
	// keeps its newest version decoded next to its bytes, through later
	// updates, and reads hand out deep copies of it: several times faster
	// reads for about three times the memory of the bytes alone.
	DisableDecodedCache bool
}

// Backend is an in-memory storage.Backend. It is safe for concurrent use.
type Backend struct {
	clock            clock.WithTicker
	logger           *slog.Logger
	historyRevisions int
	historyDuration  time.Duration
	bufferSize       int
	progressInterval time.Duration
	decodedCache     bool

	// done is closed by Close; watcher goroutines end on it.
	done     chan struct{}
	watchers sync.WaitGroup

	// revNow mirrors rev for lock-free guesses of the next revision.
	revNow atomic.Uint64

	mu sync.RWMutex
	// closed is set by Close; guarded by mu.
	closed bool
	// rev is the newest revision. It starts at 1 and every write adds one.
	rev uint64
	// minRev is the oldest revision whose snapshot is readable. Invariant:
	// log holds the events of revisions minRev+1..rev, log[i].rev == minRev+1+i,
	// and every record keeps its versions back to the one visible at minRev.
	minRev uint64
	// items and tree index the same records, by key and in key order. A
	// record stays while any readable revision can see a version of it.
	items map[string]*record
	tree  *btree.BTreeG[*record]
	// all is the revision log of every key: all.log holds the events of
	// revisions minRev+1..rev, all.log[i].rev == minRev+1+i, and
	// all.dropped == minRev. Watches of "/" read it.
	all *feed
	// feeds holds the revision log of each top-level key segment ("/pods",
	// "/configmaps"), so that a watch reads, and is woken for, the changes
	// of its resource only.
	feeds map[string]*feed
	// progressGen counts RequestWatchProgress calls.
	progressGen uint64
}

var _ storage.Backend = (*Backend)(nil)

// New returns an empty Backend at revision 1. It starts no goroutines.
func New(cfg Config) (*Backend, error) {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.HistoryRevisions == 0 {
		cfg.HistoryRevisions = DefaultHistoryRevisions
	}
	if cfg.HistoryDuration == 0 {
		cfg.HistoryDuration = DefaultHistoryDuration
	}
	if cfg.WatchBufferSize == 0 {
		cfg.WatchBufferSize = DefaultWatchBufferSize
	}
	if cfg.ProgressNotifyInterval == 0 {
		cfg.ProgressNotifyInterval = DefaultProgressNotifyInterval
	}
	switch {
	case cfg.HistoryRevisions < 1:
		return nil, fmt.Errorf("memory storage: HistoryRevisions must be positive, got %d", cfg.HistoryRevisions)
	case cfg.HistoryDuration < 0:
		return nil, fmt.Errorf("memory storage: HistoryDuration must be positive, got %v", cfg.HistoryDuration)
	case cfg.WatchBufferSize < 0:
		return nil, fmt.Errorf("memory storage: WatchBufferSize must not be negative, got %d", cfg.WatchBufferSize)
	case cfg.ProgressNotifyInterval < 0:
		return nil, fmt.Errorf("memory storage: ProgressNotifyInterval must be positive, got %v", cfg.ProgressNotifyInterval)
	}
	b := &Backend{
		clock:            cfg.Clock,
		logger:           cfg.Logger,
		historyRevisions: cfg.HistoryRevisions,
		historyDuration:  cfg.HistoryDuration,
		bufferSize:       cfg.WatchBufferSize,
		progressInterval: cfg.ProgressNotifyInterval,
		decodedCache:     !cfg.DisableDecodedCache,
		done:             make(chan struct{}),
		rev:              1,
		minRev:           1,
		items:            make(map[string]*record),
		tree:             btree.NewG(32, func(a, b *record) bool { return a.key < b.key }),
		all:              newFeed(),
		feeds:            make(map[string]*feed),
	}
	b.revNow.Store(1)
	b.all.dropped = 1
	return b, nil
}

// Storage returns the store of one resource type. Every store of a Backend
// shares its data, revision and history.
func (b *Backend) Storage(cfg storage.ResourceConfig) (storage.Interface, error) {
	switch {
	case cfg.Codec == nil:
		return nil, fmt.Errorf("memory storage: ResourceConfig.Codec is required")
	case cfg.NewFunc == nil:
		return nil, fmt.Errorf("memory storage: ResourceConfig.NewFunc is required")
	case cfg.NewListFunc == nil:
		return nil, fmt.Errorf("memory storage: ResourceConfig.NewListFunc is required")
	}
	if _, err := meta.Accessor(cfg.NewFunc()); err != nil {
		return nil, fmt.Errorf("memory storage: NewFunc must return an object with metadata: %w", err)
	}
	if !meta.IsListType(cfg.NewListFunc()) {
		return nil, fmt.Errorf("memory storage: NewListFunc must return a list, got %T", cfg.NewListFunc())
	}
	s := &store{b: b, codec: cfg.Codec, newFunc: cfg.NewFunc, newListFunc: cfg.NewListFunc, objType: ptrType(cfg.NewFunc())}
	switch cfg.Codec.(type) {
	case storage.JSONCodec, *storage.JSONCodec:
		s.decimalRevs = true
	}
	if s.objType != nil {
		if m, ok := s.objType.MethodByName("DeepCopyInto"); ok {
			if t := m.Type; t.NumIn() == 2 && t.In(1) == s.objType && t.NumOut() == 0 {
				s.deepCopyInto = m.Func
			}
		}
	}
	return s, nil
}

// CurrentRevision returns the revision of the newest write.
func (b *Backend) CurrentRevision(ctx context.Context) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return 0, ErrClosed
	}
	return b.rev, nil
}

// Compact makes revisions older than rev unreadable now, as the history
// limits would later. rev must not be newer than the current revision;
// compacting to a revision already compacted does nothing.
func (b *Backend) Compact(ctx context.Context, rev uint64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	if rev > b.rev {
		return storage.NewError(storage.ErrCodeTooLargeResourceVersion, "", rev,
			fmt.Sprintf("cannot compact beyond the current revision %d", b.rev))
	}
	b.compactLocked(rev)
	return nil
}

// RequestWatchProgress makes every open watch that asked for ProgressNotify
// send a Bookmark at the current revision once it has sent every earlier
// change, as etcd's progress requests do. It does not block on watchers.
func (b *Backend) RequestWatchProgress(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	b.progressGen++
	b.all.wakeLocked(true)
	for _, f := range b.feeds {
		f.wakeLocked(true)
	}
	return nil
}

// Close ends every open watch, waits for their goroutines and makes every
// later call fail with ErrClosed. It is safe to call more than once.
func (b *Backend) Close() error {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		close(b.done)
	}
	b.mu.Unlock()
	b.watchers.Wait()
	return nil
}

// ptrType returns the type of obj when it is a pointer, nil otherwise.
func ptrType(obj any) reflect.Type {
	if t := reflect.TypeOf(obj); t != nil && t.Kind() == reflect.Pointer {
		return t
	}
	return nil
}
