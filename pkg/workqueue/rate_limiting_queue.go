package workqueue

// RateLimitingQueue is a DelayingQueue whose AddRateLimited spaces retries
// with a RateLimiter. It is safe for concurrent use. Create it with
// NewRateLimiting and shut it down when done.
type RateLimitingQueue[T comparable] struct {
	DelayingQueue[T]
	limiter RateLimiter[T]
}

var _ RateLimitingInterface[string] = (*RateLimitingQueue[string])(nil)

// NewRateLimiting returns an empty RateLimitingQueue configured by cfg. It
// starts no goroutine.
func NewRateLimiting[T comparable](cfg RateLimitingConfig[T]) (*RateLimitingQueue[T], error) {
	q := &RateLimitingQueue[T]{}
	if err := q.init(cfg.Config, cfg.RateLimiter, true); err != nil {
		return nil, err
	}
	return q, nil
}

func (q *RateLimitingQueue[T]) init(cfg Config, limiter RateLimiter[T], separateDelays bool) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	if limiter == nil {
		limiter = defaultControllerRateLimiter[T](cfg.Clock)
	}
	q.limiter = limiter
	q.e.init(cfg, separateDelays)
	return nil
}

// AddRateLimited adds item after the delay the rate limiter returns for it;
// see RateLimitingInterface.AddRateLimited. It does not block on consumers.
func (q *RateLimitingQueue[T]) AddRateLimited(item T) {
	if q.e.shut.Load() {
		return
	}
	q.AddAfter(item, q.limiter.When(item))
}

// Forget resets the rate limiter's failure count for item.
func (q *RateLimitingQueue[T]) Forget(item T) { q.limiter.Forget(item) }

// NumRequeues reports the rate limiter's failure count for item.
func (q *RateLimitingQueue[T]) NumRequeues(item T) int { return q.limiter.NumRequeues(item) }
