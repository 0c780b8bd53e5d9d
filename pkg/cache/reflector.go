package cache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
)

// ReflectorStore is where a Reflector writes what it lists and watches: a
// DeltaFIFO in an informer.
type ReflectorStore[T Object] interface {
	Add(obj T) error
	Update(obj T) error
	Delete(obj T) error
	// Replace swaps the whole content for a fresh list.
	Replace(list []T) error
	// Resync replays the known content (ResyncPeriod).
	Resync() error
}

// ReflectorConfig configures a Reflector. Zero fields get the documented
// defaults.
type ReflectorConfig[T Object] struct {
	// Name names the reflector in logs. Default: the Go type of T.
	Name string
	// ListerWatcher reads the API. Required.
	ListerWatcher ListerWatcher[T]
	// Store receives the objects. Required.
	Store ReflectorStore[T]
	// PageSize is the limit of each list page. Default 500.
	PageSize int64
	// DisableWatchList turns off watch-list mode: by default the initial
	// state is streamed by one watch with sendInitialEvents=true instead of
	// a paginated List, falling back to List when the server refuses it.
	DisableWatchList bool
	// ResyncPeriod, if positive, calls Store.Resync that often, when
	// ShouldResync (if set) says so.
	ResyncPeriod time.Duration
	ShouldResync func() bool
	// InitialBackoff and MaxBackoff bound the exponential backoff after
	// errors. Defaults 800ms and 30s. Each wait is drawn uniformly from
	// [d/2, d] where d doubles per consecutive failure up to MaxBackoff.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// Clock drives backoff and resync. Default: the real clock.
	Clock clock.WithTicker
	// Logger receives diagnostics. Default: slog.Default().
	Logger *slog.Logger
	// WatchErrorHandler is called with every list or watch error, including
	// 410 expiries (which are followed by a relist) and watches that close
	// without delivering anything. Default: log it.
	WatchErrorHandler func(ctx context.Context, err error)
	// TweakListOptions, if set, edits the options of every List and Watch
	// (label and field selectors).
	TweakListOptions func(*metav1.ListOptions)
	// Rand returns a float in [0,1) for jitter and watch timeouts.
	// Default: math/rand/v2.
	Rand func() float64
}

// Reflector keeps a store in step with the API: it lists (or streams the
// initial state with a watch-list), then watches from the resourceVersion it
// reached, resuming after a dropped watch from the last resourceVersion seen
// (bookmarks advance it), relisting when the server says that
// resourceVersion is gone (410), and backing off exponentially with jitter
// after errors. Run it once.
type Reflector[T Object] struct {
	cfg ReflectorConfig[T]

	mu      sync.Mutex
	lastRV  string // guarded by mu
	lastErr error  // guarded by mu; the error of the last failed cycle
	// Run's state, owned by the Run goroutine.
	needList          bool
	watchListDisabled bool
	failures          int
}

// NewReflector validates cfg and returns a Reflector.
func NewReflector[T Object](cfg ReflectorConfig[T]) (*Reflector[T], error) {
	if cfg.ListerWatcher == nil {
		return nil, errors.New("reflector: ListerWatcher is required")
	}
	if cfg.Store == nil {
		return nil, errors.New("reflector: Store is required")
	}
	if cfg.PageSize < 0 || cfg.InitialBackoff < 0 || cfg.MaxBackoff < 0 || cfg.ResyncPeriod < 0 {
		return nil, errors.New("reflector: negative PageSize, backoff or resync period")
	}
	if cfg.Name == "" {
		var zero T
		cfg.Name = fmt.Sprintf("%T", zero)
	}
	if cfg.PageSize == 0 {
		cfg.PageSize = 500
	}
	if cfg.InitialBackoff == 0 {
		cfg.InitialBackoff = 800 * time.Millisecond
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = 30 * time.Second
	}
	if cfg.MaxBackoff < cfg.InitialBackoff {
		cfg.MaxBackoff = cfg.InitialBackoff
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.Logger = cfg.Logger.With("reflector", cfg.Name)
	if cfg.WatchErrorHandler == nil {
		logger := cfg.Logger
		cfg.WatchErrorHandler = func(ctx context.Context, err error) {
			if IsExpired(err) {
				logger.InfoContext(ctx, "watch expired, relisting", "err", err)
				return
			}
			logger.WarnContext(ctx, "list or watch failed", "err", err)
		}
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	return &Reflector[T]{cfg: cfg, needList: true}, nil
}

// LastSyncResourceVersion returns the resourceVersion the store reflects.
// It is safe for concurrent use.
func (r *Reflector[T]) LastSyncResourceVersion() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastRV
}

// LastSyncError returns the error of the last list or watch cycle, nil once
// a list (or watch-list) has succeeded since: why the store is not in
// step, for instance a NotFound while the resource is not served yet. It is
// safe for concurrent use.
func (r *Reflector[T]) LastSyncError() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastErr
}

func (r *Reflector[T]) setLastErr(err error) {
	r.mu.Lock()
	r.lastErr = err
	r.mu.Unlock()
}

func (r *Reflector[T]) setLastRV(rv string) {
	if rv == "" {
		return
	}
	r.mu.Lock()
	r.lastRV = rv
	r.mu.Unlock()
}

// IsExpired reports whether err says a resourceVersion is too old: a 410
// Gone or a StatusReason Expired.
func IsExpired(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}

func statusExpired(s *metav1.Status) bool {
	return s != nil && (s.Code == http.StatusGone || s.Reason == metav1.StatusReasonExpired || s.Reason == metav1.StatusReasonGone)
}

// errWatchClosedEmpty reports a watch that closed before delivering
// anything; it is backed off so that a server closing watches at once is
// not hammered.
var errWatchClosedEmpty = errors.New("watch closed without delivering any event")

// Run lists and watches until ctx ends; it returns after its goroutines exit.
func (r *Reflector[T]) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	if r.cfg.ResyncPeriod > 0 {
		wg.Go(func() { r.resyncLoop(ctx) })
	}
	for ctx.Err() == nil {
		err := r.listAndWatch(ctx)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			r.failures = 0
			continue
		}
		r.setLastErr(err)
		r.cfg.WatchErrorHandler(ctx, err)
		if IsExpired(err) {
			// The store is fine; only the resourceVersion is gone. Relist
			// at once, but count it so a loop of expiries backs off.
			r.needList = true
			if r.failures == 0 {
				r.failures++
				continue
			}
		}
		if !r.wait(ctx) {
			return
		}
	}
}

// wait sleeps the next backoff interval; false if ctx ended first.
func (r *Reflector[T]) wait(ctx context.Context) bool {
	d := r.cfg.InitialBackoff
	for i := 0; i < r.failures && d < r.cfg.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, r.cfg.MaxBackoff)
	r.failures++
	d = d/2 + time.Duration(r.cfg.Rand()*float64(d/2))
	t := r.cfg.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

func (r *Reflector[T]) resyncLoop(ctx context.Context) {
	for {
		t := r.cfg.Clock.NewTimer(r.cfg.ResyncPeriod)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		if r.cfg.ShouldResync == nil || r.cfg.ShouldResync() {
			if err := r.cfg.Store.Resync(); err != nil {
				r.cfg.Logger.ErrorContext(ctx, "resync failed", "err", err)
			}
		}
	}
}

func (r *Reflector[T]) options() metav1.ListOptions {
	var opts metav1.ListOptions
	if r.cfg.TweakListOptions != nil {
		r.cfg.TweakListOptions(&opts)
	}
	return opts
}

// listAndWatch syncs the store if needed, then runs one watch. nil means
// "go on at once"; an error means "back off first".
func (r *Reflector[T]) listAndWatch(ctx context.Context) error {
	var w Watch[T]
	if r.needList {
		if !r.cfg.DisableWatchList && !r.watchListDisabled {
			var err error
			w, err = r.watchList(ctx)
			if err != nil {
				return err
			}
		}
		if w == nil {
			if err := r.list(ctx); err != nil {
				return err
			}
		}
	}
	if w == nil {
		opts := r.options()
		opts.ResourceVersion = r.LastSyncResourceVersion()
		opts.AllowWatchBookmarks = true
		opts.TimeoutSeconds = r.watchTimeout()
		var err error
		w, err = r.cfg.ListerWatcher.Watch(ctx, opts)
		if err != nil {
			return fmt.Errorf("watch: %w", err)
		}
		r.setLastErr(nil)
	}
	n, err := r.handleWatch(ctx, w)
	if err != nil {
		return err
	}
	if n == 0 {
		return errWatchClosedEmpty
	}
	return nil
}

func (r *Reflector[T]) watchTimeout() *int64 {
	// Between 5 and 10 minutes, so that a fleet of clients spreads out.
	s := int64(300 + r.cfg.Rand()*300)
	return &s
}

// list replaces the store with a paginated list of the latest state.
func (r *Reflector[T]) list(ctx context.Context) error {
	opts := r.options()
	opts.Limit = r.cfg.PageSize
	var items []T
	var rv string
	for {
		page, err := r.cfg.ListerWatcher.List(ctx, opts)
		if err != nil {
			return fmt.Errorf("list: %w", err)
		}
		if page == nil {
			return errors.New("list: nil page")
		}
		if rv == "" {
			rv = page.ResourceVersion
		}
		items = append(items, page.Items...)
		if page.Continue == "" {
			break
		}
		opts.Continue = page.Continue
		opts.ResourceVersion = ""
	}
	if err := r.cfg.Store.Replace(items); err != nil {
		return fmt.Errorf("replace store: %w", err)
	}
	r.setLastRV(rv)
	r.setLastErr(nil)
	r.needList = false
	return nil
}

// watchList streams the initial state with one watch. It returns the open
// watch once the initial-events-end bookmark has arrived and the store is
// replaced; (nil, nil) when List must be used instead (the server refused,
// or the stream ended early); an error to back off.
func (r *Reflector[T]) watchList(ctx context.Context) (Watch[T], error) {
	opts := r.options()
	yes := true
	opts.SendInitialEvents = &yes
	opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
	opts.ResourceVersion = r.LastSyncResourceVersion()
	opts.AllowWatchBookmarks = true
	opts.TimeoutSeconds = r.watchTimeout()
	w, err := r.cfg.ListerWatcher.Watch(ctx, opts)
	if err != nil {
		if IsExpired(err) {
			r.setLastRVForce("")
			return nil, fmt.Errorf("watch-list: %w", err)
		}
		if ctx.Err() != nil {
			return nil, err
		}
		if apierrors.IsNotFound(err) {
			// The resource is not served (yet: a custom resource whose
			// CRD is not installed). That says nothing about watch-list:
			// back off and try it again.
			return nil, fmt.Errorf("watch-list: %w", err)
		}
		r.cfg.Logger.InfoContext(ctx, "server refused watch-list, falling back to list", "err", err)
		r.watchListDisabled = true
		return nil, nil
	}
	var order []string
	items := map[string]T{}
	for {
		select {
		case <-ctx.Done():
			w.Stop()
			return nil, ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				r.cfg.Logger.InfoContext(ctx, "watch-list ended before the initial events, falling back to list")
				return nil, nil
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				key, err := ObjectKey(ev.Object)
				if err != nil {
					r.cfg.Logger.WarnContext(ctx, "skipping object without key", "err", err)
					continue
				}
				if _, ok := items[key]; !ok {
					order = append(order, key)
				}
				items[key] = ev.Object
			case watch.Deleted:
				if key, err := ObjectKey(ev.Object); err == nil {
					delete(items, key)
				}
			case watch.Bookmark:
				if ev.Object.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
					continue
				}
				list := make([]T, 0, len(items))
				for _, k := range order {
					if obj, ok := items[k]; ok {
						list = append(list, obj)
					}
				}
				if err := r.cfg.Store.Replace(list); err != nil {
					w.Stop()
					return nil, fmt.Errorf("replace store: %w", err)
				}
				r.setLastRV(ev.Object.GetResourceVersion())
				r.setLastErr(nil)
				r.needList = false
				return w, nil
			case watch.Error:
				w.Stop()
				if statusExpired(ev.Status) {
					r.setLastRVForce("")
					return nil, fmt.Errorf("watch-list: %w", statusError(ev.Status))
				}
				return nil, fmt.Errorf("watch-list: %w", statusError(ev.Status))
			}
		}
	}
}

func (r *Reflector[T]) setLastRVForce(rv string) {
	r.mu.Lock()
	r.lastRV = rv
	r.mu.Unlock()
}

func statusError(s *metav1.Status) error {
	if s == nil {
		return errors.New("watch error event without status")
	}
	return &apierrors.StatusError{ErrStatus: *s}
}

// handleWatch applies the events of w to the store until w closes, ctx ends
// or an error event arrives; it returns how many events it applied.
func (r *Reflector[T]) handleWatch(ctx context.Context, w Watch[T]) (int, error) {
	defer w.Stop()
	n := 0
	for {
		select {
		case <-ctx.Done():
			return n, ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return n, nil
			}
			var err error
			switch ev.Type {
			case watch.Added:
				err = r.cfg.Store.Add(ev.Object)
			case watch.Modified:
				err = r.cfg.Store.Update(ev.Object)
			case watch.Deleted:
				err = r.cfg.Store.Delete(ev.Object)
			case watch.Bookmark:
			case watch.Error:
				if statusExpired(ev.Status) {
					r.needList = true
				}
				return n, fmt.Errorf("watch: %w", statusError(ev.Status))
			default:
				return n, fmt.Errorf("watch: unexpected event type %q", ev.Type)
			}
			if err != nil {
				r.cfg.Logger.ErrorContext(ctx, "cannot apply watch event", "type", ev.Type, "err", err)
			}
			if !isNil(ev.Object) {
				r.setLastRV(ev.Object.GetResourceVersion())
			}
			n++
		}
	}
}
