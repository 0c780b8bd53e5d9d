// Package cacher puts a watch cache in front of a storage.Backend, as
// kube-apiserver's cacher does in front of etcd: reads and watches are
// served from memory, so N watchers of a resource cost one backend watch.
//
// For each resource root (the first key segment, "/pods") the Cacher keeps,
// fed by one backend list and then one backend watch:
//
//   - the current state, ordered by key, and the revision it is current to;
//   - a window of the last Config.WindowSize events.
//
// What it guarantees:
//
//   - Writes go straight to the backend; the cache learns of them from its
//     watch.
//   - A list or watch at resourceVersion "" is consistent: it is served
//     once the cache has caught up with the backend's current revision
//     (asking the backend for a progress bookmark when the cache's keys
//     have not changed; see storagetest.ProgressRequester). When the cache
//     cannot show that within Config.ConsistentReadTimeout, the backend
//     answers instead. Get at "" always reads the backend.
//   - "0" reads whatever the cache holds; N (not older than) waits for the
//     cache to reach N, or goes to the backend after the timeout. Exact
//     revisions and continue tokens read the backend's snapshot; a first
//     page served by the cache carries a token at its revision, which the
//     backend resumes exactly.
//   - A watch from N replays the window's events after N, then follows live
//     changes, in revision order, each exactly once. A watch from N older
//     than the window is handed to the backend, which replays its own
//     history after N or, once N is compacted there, fails with Expired
//     (410 Gone: the client relists). kube-apiserver's cacher answers 410
//     as soon as N leaves its window; kplane's caches start on first use,
//     so their window can begin after revisions a client legitimately
//     holds, and handing those watches on saves a relist. The cost is one
//     backend watch per such watcher; watchers resuming inside the window
//     (the common case, kept there by bookmarks) share the cache's one.
//     An N newer than the backend's revision goes to the backend at once,
//     which fails it with TooLargeResourceVersion; one the cache has
//     merely not reached yet waits for it as a list does, and goes to the
//     backend after Config.ConsistentReadTimeout.
//     Predicates hold as for the backend: an object that stops matching
//     arrives as Deleted, one that starts matching as Added.
//   - Event objects are shared by every watcher and must not be modified;
//     each change is encoded by the resource's Codec at most once, and that
//     Event.Raw is shared too. Get and GetList return private copies.
//   - Watchers that ask for progress get Bookmarks whenever the backend
//     reports a newer revision with no change in their keys; while any
//     such watcher is open the cache asks the backend for that report every
//     Config.BookmarkInterval.
//   - Slow watchers: each watcher buffers Config.WatchBufferSize events. The
//     cache never waits for a watcher: when an event finds the buffer full,
//     the watcher is closed after what it holds, with an Expired Error event.
//   - When the backend watch fails (for example its revision was
//     compacted), the cache closes its watchers (they re-watch from their
//     last revision or relist) and relists with backoff.
//
// Each resource's cache starts with the first read or watch of it and runs
// in a goroutine until Close.
package cacher
