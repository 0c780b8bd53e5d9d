// Package informers shares informers within a process: a Factory keeps one
// SharedIndexInformer per resource, so every controller watching pods reads
// the same cache and the API server serves one watch.
//
// Guarantees: For (and the typed accessors) return the same informer for
// the same resource however often and from however many goroutines they are
// called; Start starts only the informers not started yet and may be called
// again after more are requested; Shutdown stops every informer and returns
// once all their goroutines have exited, and is idempotent. The factory's
// core takes the construction of the ListerWatcher as a function, so it
// works with any source: pkg/client against an API server, or
// cache/cachetest in memory.
package informers
