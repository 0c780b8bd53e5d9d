// Package storagetest is the conformance suite every storage.Backend
// passes: one call, Run, checks the semantics kube-apiserver relies on
// (revisions, create/update/delete with preconditions, consistent and
// exact lists, pagination pinned to a snapshot, watches from a revision
// with filtering, bookmarks and initial events, compaction), a
// linearizability check of concurrent clients with porcupine, and the
// order, gaps and duplicates of watch histories under concurrent writes.
//
// The suite uses only the storage.Backend and storage.Interface contracts,
// with core/v1 ConfigMaps and Pods under keys such as
// "/configmaps/<namespace>/<name>", stored with storage.JSONCodec. Checks
// that need more than the contract use optional interfaces the backend may
// implement: Compactor to compact on demand and ProgressRequester to ask
// watches for a bookmark now; a backend without them skips those checks
// and the suite says why.
//
// Where the interface comments leave a choice, the suite pins the one
// kube-apiserver makes:
//
//   - Delete returns the last state stamped with the revision of the
//     delete, and a Deleted event carries the same object, with the state
//     before the delete as PrevObject.
//   - A watch that filters sends Added when an object starts to match and
//     Deleted (the state before, stamped with the change's revision) when
//     it stops.
//   - A Bookmark's object is an empty object of the resource with only its
//     resourceVersion set (plus the initial-events annotation after the
//     initial events).
//   - A watch from a compacted revision fails: either Watch returns an
//     ErrCodeExpired error, or the watch's first event is a watch.Error
//     with a 410 status, after which the channel closes.
//   - Event.Raw, when set, decodes to Event.Object.
//
// Every wait for an event is bounded (20s) so that a broken backend fails
// rather than hangs; the long checks (linearizability, watch history) run
// smaller under -short.
package storagetest
