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
package workqueue
