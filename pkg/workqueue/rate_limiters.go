package workqueue

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/utils/clock"
)

// Defaults of the rate limiters, as Kubernetes controllers use them.
const (
	DefaultExponentialBase = 5 * time.Millisecond
	DefaultExponentialMax  = 1000 * time.Second
	DefaultBucketQPS       = 10
	DefaultBucketBurst     = 100
)

// DefaultControllerRateLimiter returns the rate limiter controllers use by
// default: the larger of a per-item exponential backoff (5ms doubling up to
// 1000s) and an overall token bucket (10 per second, burst 100) that bounds
// the retry rate of the whole queue.
func DefaultControllerRateLimiter[T comparable]() RateLimiter[T] {
	return defaultControllerRateLimiter[T](clock.RealClock{})
}

// defaultControllerRateLimiter is DefaultControllerRateLimiter with its
// bucket on clock c.
func defaultControllerRateLimiter[T comparable](c clock.PassiveClock) RateLimiter[T] {
	return &MaxOfLimiter[T]{limiters: []RateLimiter[T]{
		newExponential[T](DefaultExponentialBase, DefaultExponentialMax),
		newBucket[T](DefaultBucketQPS, DefaultBucketBurst, c),
	}}
}

// ExponentialConfig configures an ExponentialLimiter.
type ExponentialConfig struct {
	// Base is the delay after the first failure. Zero means 5ms.
	Base time.Duration
	// Max caps the delay. Zero means 1000s. A Max below Base makes every
	// delay Max, as client-go's limiter does.
	Max time.Duration
}

// ExponentialLimiter delays an item Base*2^(failures-1) after each failure,
// capped at Max and immune to overflow however many failures pile up. It is
// safe for concurrent use.
type ExponentialLimiter[T comparable] struct {
	base, max time.Duration
	mu        sync.Mutex
	failures  map[T]int // items with at least one failure since Forget
}

var _ RateLimiter[string] = (*ExponentialLimiter[string])(nil)

// NewExponentialLimiter returns an ExponentialLimiter configured by cfg.
func NewExponentialLimiter[T comparable](cfg ExponentialConfig) (*ExponentialLimiter[T], error) {
	if cfg.Base < 0 || cfg.Max < 0 {
		return nil, fmt.Errorf("workqueue: exponential limiter delays must not be negative, got base %v max %v", cfg.Base, cfg.Max)
	}
	if cfg.Base == 0 {
		cfg.Base = DefaultExponentialBase
	}
	if cfg.Max == 0 {
		cfg.Max = DefaultExponentialMax
	}
	return newExponential[T](cfg.Base, cfg.Max), nil
}

func newExponential[T comparable](base, max time.Duration) *ExponentialLimiter[T] {
	return &ExponentialLimiter[T]{base: base, max: max, failures: make(map[T]int)}
}

// When records a failure and returns the backoff for it.
func (l *ExponentialLimiter[T]) When(item T) time.Duration {
	l.mu.Lock()
	n := l.failures[item]
	if n < math.MaxInt {
		l.failures[item] = n + 1
	}
	l.mu.Unlock()
	return backoff(l.base, l.max, n)
}

// backoff returns base*2^n capped at max, without overflowing.
func backoff(base, max time.Duration, n int) time.Duration {
	if n >= 63 || base > max>>n {
		return max
	}
	return min(base<<n, max)
}

// Forget resets item's failures.
func (l *ExponentialLimiter[T]) Forget(item T) {
	l.mu.Lock()
	delete(l.failures, item)
	l.mu.Unlock()
}

// NumRequeues reports item's failures since the last Forget.
func (l *ExponentialLimiter[T]) NumRequeues(item T) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failures[item]
}

// FastSlowConfig configures a FastSlowLimiter. Zero fields are used as they
// are: a zero delay retries at once, zero FastAttempts makes every retry slow.
type FastSlowConfig struct {
	Fast         time.Duration
	Slow         time.Duration
	FastAttempts int
}

// FastSlowLimiter retries an item after Fast for its first FastAttempts
// failures and after Slow from then on. It is safe for concurrent use.
type FastSlowLimiter[T comparable] struct {
	cfg      FastSlowConfig
	mu       sync.Mutex
	failures map[T]int
}

var _ RateLimiter[string] = (*FastSlowLimiter[string])(nil)

// NewFastSlowLimiter returns a FastSlowLimiter configured by cfg.
func NewFastSlowLimiter[T comparable](cfg FastSlowConfig) (*FastSlowLimiter[T], error) {
	if cfg.Fast < 0 || cfg.Slow < 0 || cfg.FastAttempts < 0 {
		return nil, fmt.Errorf("workqueue: fast-slow limiter settings must not be negative, got %+v", cfg)
	}
	return &FastSlowLimiter[T]{cfg: cfg, failures: make(map[T]int)}, nil
}

// When records a failure and returns the fast or the slow delay.
func (l *FastSlowLimiter[T]) When(item T) time.Duration {
	l.mu.Lock()
	n := l.failures[item]
	if n < math.MaxInt {
		n++
		l.failures[item] = n
	}
	l.mu.Unlock()
	if n <= l.cfg.FastAttempts {
		return l.cfg.Fast
	}
	return l.cfg.Slow
}

// Forget resets item's failures.
func (l *FastSlowLimiter[T]) Forget(item T) {
	l.mu.Lock()
	delete(l.failures, item)
	l.mu.Unlock()
}

// NumRequeues reports item's failures since the last Forget.
func (l *FastSlowLimiter[T]) NumRequeues(item T) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failures[item]
}

// BucketConfig configures a BucketLimiter.
type BucketConfig struct {
	// QPS is the sustained rate of retries per second. Zero means 10;
	// +Inf means no limit.
	QPS float64
	// Burst is how many retries may go at once. Zero means 100.
	Burst int
	// Clock is read to compute delays. Nil means the real clock.
	Clock clock.PassiveClock
}

// BucketLimiter is a token bucket shared by all items: it bounds the retry
// rate of a whole queue, whichever items fail. It tracks no items, so Forget
// does nothing and NumRequeues is always 0. It is safe for concurrent use.
type BucketLimiter[T comparable] struct {
	limiter *rate.Limiter
	clock   clock.PassiveClock
}

var _ RateLimiter[string] = (*BucketLimiter[string])(nil)

// NewBucketLimiter returns a BucketLimiter configured by cfg.
func NewBucketLimiter[T comparable](cfg BucketConfig) (*BucketLimiter[T], error) {
	if cfg.QPS < 0 || math.IsNaN(cfg.QPS) || cfg.Burst < 0 {
		return nil, fmt.Errorf("workqueue: bucket limiter qps and burst must not be negative, got qps %v burst %d", cfg.QPS, cfg.Burst)
	}
	if cfg.QPS == 0 {
		cfg.QPS = DefaultBucketQPS
	}
	if cfg.Burst == 0 {
		cfg.Burst = DefaultBucketBurst
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return newBucket[T](cfg.QPS, cfg.Burst, cfg.Clock), nil
}

func newBucket[T comparable](qps float64, burst int, c clock.PassiveClock) *BucketLimiter[T] {
	limit := rate.Limit(qps)
	if math.IsInf(qps, 1) {
		limit = rate.Inf
	}
	return &BucketLimiter[T]{limiter: rate.NewLimiter(limit, burst), clock: c}
}

// When takes a token and returns how long until it is due.
func (l *BucketLimiter[T]) When(T) time.Duration {
	now := l.clock.Now()
	return l.limiter.ReserveN(now, 1).DelayFrom(now)
}

// Forget does nothing: the bucket does not track items.
func (l *BucketLimiter[T]) Forget(T) {}

// NumRequeues returns 0: the bucket does not track items.
func (l *BucketLimiter[T]) NumRequeues(T) int { return 0 }

// MaxOfLimiter asks every one of its limiters and uses the longest delay and
// the highest failure count; Forget reaches them all. Combined with a token
// bucket, the bucket's burst can appear exceeded when other limiters delayed
// some items longer. It is safe for concurrent use if its limiters are.
type MaxOfLimiter[T comparable] struct {
	limiters []RateLimiter[T]
}

var _ RateLimiter[string] = (*MaxOfLimiter[string])(nil)

// NewMaxOfLimiter returns a MaxOfLimiter over limiters, which must be at
// least one and not nil.
func NewMaxOfLimiter[T comparable](limiters ...RateLimiter[T]) (*MaxOfLimiter[T], error) {
	if len(limiters) == 0 {
		return nil, errors.New("workqueue: max-of limiter needs at least one limiter")
	}
	for i, l := range limiters {
		if l == nil {
			return nil, fmt.Errorf("workqueue: max-of limiter %d is nil", i)
		}
	}
	return &MaxOfLimiter[T]{limiters: append([]RateLimiter[T](nil), limiters...)}, nil
}

// When asks every limiter, so each records the failure, and returns the
// longest delay.
func (l *MaxOfLimiter[T]) When(item T) time.Duration {
	var d time.Duration
	for _, r := range l.limiters {
		d = max(d, r.When(item))
	}
	return d
}

// Forget makes every limiter forget item.
func (l *MaxOfLimiter[T]) Forget(item T) {
	for _, r := range l.limiters {
		r.Forget(item)
	}
}

// NumRequeues returns the highest failure count among the limiters.
func (l *MaxOfLimiter[T]) NumRequeues(item T) int {
	n := 0
	for _, r := range l.limiters {
		n = max(n, r.NumRequeues(item))
	}
	return n
}

// MaxWaitConfig configures a MaxWaitLimiter.
type MaxWaitConfig[T comparable] struct {
	// Limiter decides the delays and counts the failures. Required.
	Limiter RateLimiter[T]
	// Max caps every delay. Zero is used as it is: every retry goes at once.
	Max time.Duration
}

// MaxWaitLimiter caps the delays of another limiter at Max, so that no
// retry waits longer however many failures pile up; failures, Forget and
// NumRequeues are the wrapped limiter's. It is client-go's
// WithMaxWaitRateLimiter. It is safe for concurrent use if the wrapped
// limiter is.
type MaxWaitLimiter[T comparable] struct {
	limiter RateLimiter[T]
	max     time.Duration
}

var _ RateLimiter[string] = (*MaxWaitLimiter[string])(nil)

// NewMaxWaitLimiter returns a MaxWaitLimiter configured by cfg.
func NewMaxWaitLimiter[T comparable](cfg MaxWaitConfig[T]) (*MaxWaitLimiter[T], error) {
	if cfg.Limiter == nil {
		return nil, errors.New("workqueue: max-wait limiter needs a limiter")
	}
	if cfg.Max < 0 {
		return nil, fmt.Errorf("workqueue: max-wait limiter cap must not be negative, got %v", cfg.Max)
	}
	return &MaxWaitLimiter[T]{limiter: cfg.Limiter, max: cfg.Max}, nil
}

// When asks the wrapped limiter, which records the failure, and returns its
// delay capped at Max.
func (l *MaxWaitLimiter[T]) When(item T) time.Duration {
	return min(l.limiter.When(item), l.max)
}

// Forget makes the wrapped limiter forget item.
func (l *MaxWaitLimiter[T]) Forget(item T) { l.limiter.Forget(item) }

// NumRequeues returns the wrapped limiter's failure count for item.
func (l *MaxWaitLimiter[T]) NumRequeues(item T) int { return l.limiter.NumRequeues(item) }
