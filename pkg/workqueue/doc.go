// Package workqueue provides the typed work queues controllers are built
// on: a deduplicating FIFO (Queue), one that can delay items
// (DelayingQueue), one that spaces retries with pluggable rate limiters
// (RateLimitingQueue) and one that orders ready items by priority
// (PriorityQueue).
//
// Every queue guarantees:
//
//   - Fair: ready items are handed out in the order they became ready (for
//     PriorityQueue, highest priority first and in that order within a
//     priority). Blocked Get callers are woken in the order they called.
//   - Stingy: an item added several times before a worker gets it is
//     processed once, and an item is never processed by two workers at
//     once. An item added while it is being processed is kept aside and
//     queued again when Done is called, so it is processed once more, after
//     the current pass: every add is followed by at least one processing
//     pass that starts after it.
//   - Multiple producers and consumers: every method is safe for concurrent
//     use, and Add, AddAfter and AddRateLimited never block on consumers.
//   - Shutdown: after ShutDown adds are ignored, blocked Get calls return at
//     once with shutdown=true, and Get keeps handing out the items that were
//     already ready until none are left. Items still waiting for a delay are
//     dropped. ShutDownWithDrain also waits until every ready item has been
//     handed out and every handed-out item is Done. Both are idempotent and
//     return only after the queue's timer goroutine, if it was started, has
//     exited.
//
// Delays are measured on the clock from the Config (k8s.io/utils/clock), so
// tests step a fake clock instead of sleeping. Items are compared with ==,
// so T is usually a string key such as "namespace/name".
//
// Controllers should accept a RateLimitingInterface, which both
// *RateLimitingQueue and *PriorityQueue implement.
//
// # Compared with client-go
//
// Queue, DelayingQueue and RateLimitingQueue behave as client-go's
// (k8s.io/client-go/util/workqueue) Typed, delaying and rate-limiting
// queues: the same items come out of Get in the same order at the same
// times, with the same Len, ShuttingDown, NumRequeues, ShutDownWithDrain
// waits and metrics (test/compat drives both side by side). The limiters
// are client-go's ItemExponentialFailure (ExponentialLimiter),
// ItemFastSlow (FastSlowLimiter), Bucket (BucketLimiter), MaxOf
// (MaxOfLimiter) and WithMaxWait (MaxWaitLimiter) rate limiters. kplane
// deliberately differs where client-go's behaviour is an accident or an
// API kplane does not keep:
//
//   - Done of an item that was not handed out is a no-op. client-go's
//     queues such an item again if it is waiting, so it sits in the queue
//     twice and two workers can get it at once, against its own stingy
//     guarantee.
//   - Delayed items whose ready times are equal become ready in the order
//     they were added; client-go's heap leaves their order unspecified.
//   - Blocked Get callers get items strictly in the order they called.
//     client-go's wait on a sync.Cond, and a waiter woken for nothing goes
//     to the back of the line; its Done wakes one whenever the last item
//     being processed is done, for the sake of ShutDownWithDrain.
//   - AddRateLimited on a shut-down queue does nothing. client-go's still
//     asks its limiter, counting a failure and taking a bucket token that
//     a limiter shared with other queues then lacks.
//   - AddAfter never blocks. client-go's hands delayed adds to its
//     goroutine over a channel of 1000 and blocks when that is full.
//   - Constructors start no goroutine: the timer goroutine starts on the
//     first delayed add, or the first Get when metrics are on, and
//     ShutDownWithDrain stops it too. The metrics refreshes still fall on
//     the construction time plus whole periods, as client-go's ticker does.
//   - Metrics come from Config.Metrics, with no global provider
//     (client-go's SetProvider), and a queue with metrics must be named,
//     where client-go silently drops the metrics of an unnamed queue.
//   - The exponential limiter computes in integers and returns Max for any
//     delay that does not fit a time.Duration. client-go's floating-point
//     overflow check misses a delay that rounds to exactly 2^63ns (a base
//     of a power of two nanoseconds, after enough failures), which then
//     converts to a negative delay, an immediate retry, whatever the cap.
//   - The limiter configs treat zero as a default (5ms base, 1000s cap,
//     10 qps, burst 100) and reject negative values and an empty MaxOf,
//     where client-go takes any value: a zero base that never backs off, a
//     zero burst whose bucket returns rate.InfDuration for every retry.
//   - The queue's storage is not pluggable (client-go's Queue with Touch);
//     PriorityQueue is the queue with another order. There is no
//     ParallelizeUntil: errgroup does that job.
package workqueue
