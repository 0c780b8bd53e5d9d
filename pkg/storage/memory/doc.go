// Package memory is a storage.Backend that keeps everything in process
// memory: for tests, for single-process kplane (--storage=memory), and as the
// reference the storagetest conformance suite is written against.
//
// Guarantees:
//
//   - One revision for the whole Backend, starting at 1; every write
//     (create, update that changes bytes, delete) adds exactly one, and it
//     becomes the object's metadata.resourceVersion. Writes are linearizable:
//     each takes effect atomically at one point between its call and return,
//     and every read sees every write that returned before it started.
//   - Multi-version reads. Each key keeps its versions back to the oldest
//     readable revision, so a list at an exact revision, or the later pages
//     of a paginated list, read one consistent snapshot while writes go on.
//   - Bounded history. The newest Config.HistoryRevisions revisions, and no
//     older than Config.HistoryDuration, stay readable; older ones are
//     compacted as writes arrive (or by Compact). Reading or watching from a
//     compacted revision fails with storage.ErrCodeExpired (410 Gone).
//   - Watches are fed from the revision log, not from per-watcher queues:
//     a write appends one event to the log of its top-level key segment
//     ("/pods", "/configmaps") and wakes that log's watchers; each watcher
//     walks the log at its own pace, so writers never wait for watchers,
//     and watchers of one resource never wake for another's writes. An event
//     is decoded once and shared by every watcher of the resource
//     (Event.Object, Event.Raw are read only). Each watcher delivers every
//     change after its start revision, in revision order, exactly once.
//   - Slow watchers: a watcher's ResultChan buffers Config.WatchBufferSize
//     events; a watcher whose consumer falls so far behind that the next
//     revision it must send is compacted out of the history gets a
//     watch.Error event (410 Expired) and its channel is closed: the client
//     relists. Memory held for slow watchers is thus bounded by the history.
//   - Reads hand out private copies. A key that is read keeps its newest
//     version decoded next to its bytes (unless Config.DisableDecodedCache),
//     also through later updates; Get and GetList deep-copy that object into
//     the caller's instead of decoding the bytes again. The decoded object is
//     never handed out itself and serves only the store (codec and type)
//     that decoded it. Older versions, read by exact or paged lists, are
//     decoded from their bytes. An update of a decoded key hands its
//     watchers the new and previous states decoded (shared, read only, like
//     every event's objects). An update encodes once unless the encoding
//     could equal the stored bytes but for the revision.
//
// A Backend starts a goroutine per open watch and none otherwise; Close ends
// them all and waits for them.
package memory
