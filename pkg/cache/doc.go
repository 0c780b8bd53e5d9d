// Package cache is the informer machinery: a thread-safe indexed store, the
// DeltaFIFO with its tombstones, the reflector that lists and watches through
// a ListerWatcher, shared informers and generic listers. Everything is
// generic over the object type T (such as *corev1.Pod).
//
// Guarantees:
//
//   - Indexer: safe for concurrent use; readers take no lock and never block
//     the writer or each other (every write publishes an immutable
//     copy-on-write snapshot, O(log n) per write); every read sees one
//     consistent state; Replace is atomic; a write that fails (no name, a
//     failing index function) changes nothing. Walks of many objects (List,
//     ByIndex, Range, ListKeys) yield the processor every 256 objects, and
//     while the informer has changes queued up to four times before they
//     start and every 8 objects, so goroutines listing in a loop cannot
//     starve event processing on a machine with few cores.
//     The informer publishes one snapshot per batch of keys (up to 256) and
//     notifies handlers only once the batch is visible.
//   - Shared objects: what the cache, listers and handlers hand out is shared
//     by every reader. Never mutate it; DeepCopy first.
//   - DeltaFIFO: a key is queued once, with all its pending changes in order;
//     consecutive deletes collapse; a relist that finds a known object gone
//     produces a Deleted delta carrying a DeletedFinalStateUnknown tombstone
//     with the last known state. It behaves as client-go's
//     (k8s.io/client-go/tools/cache) DeltaFIFO made with
//     EmitDeltaTypeReplaced, as client-go's informers make theirs: the same
//     keys pop in the same order with the same deltas, initial-list flags
//     and HasSynced (test/compat drives both side by side). It deliberately
//     differs in these ways: Replace always emits Replaced (there is no
//     Sync-for-Replace compatibility mode); a tombstone is a Deleted delta
//     whose Object is the last known state and whose Tombstone is set,
//     rather than an Object of type DeletedFinalStateUnknown; a key that
//     the known objects list but no longer hold gets no tombstone (client-go
//     queues one with a nil object, which every delete handler would have
//     to reject); a Replace whose Transform or key fails queues nothing
//     (client-go's has queued the objects before the failing one); keys are
//     always namespace/name (no KeyFunction); Pop takes a context, and
//     processing blocks Replace and Resync but not Add, Update and Delete
//     (client-go's holds its lock throughout); a process error wrapping
//     ErrRequeue puts the deltas back (client-go's DeltaFIFO no longer
//     does); Add and Update of an object without a name fail without
//     counting as the first change.
//   - Reflector: after a dropped watch it resumes from the last
//     resourceVersion seen (bookmarks included) without relisting; on 410 it
//     relists; after errors it backs off exponentially with jitter, capped;
//     the initial state is streamed by a watch-list when the server supports
//     it, else listed page by page.
//   - SharedIndexInformer: the cache is updated before handlers are told;
//     each handler is called from its own goroutine, one call at a time, in
//     the order changes were observed, from its own unbounded queue, so a
//     slow handler delays only itself (its backlog is visible through
//     Registration.Pending and logged as it grows); a handler added late
//     first receives the current content as synthetic adds; Run returns only
//     after every goroutine it started has exited.
package cache
