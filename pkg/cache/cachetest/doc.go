// Package cachetest provides an in-memory fake of the API as a
// cache.ListerWatcher, for testing informers without a server.
//
// Source models what clients of a real API server see: a global,
// increasing resourceVersion; paginated lists (limit/continue) served from a
// consistent snapshot; watches that replay history from a resourceVersion;
// compaction that makes old resourceVersions answer 410 Gone (from Watch
// itself, or as an Error event with reason Expired on an open watch);
// bookmarks; watch-list (sendInitialEvents=true ending with the
// "k8s.io/initial-events-end" bookmark); and dropped connections (the
// result channel closes). It is safe for concurrent use.
package cachetest
