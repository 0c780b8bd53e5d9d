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
// "/configmaps/<namespace>/<name>". Checks that need more than the contract
// use optional interfaces the backend may implement: Compactor to compact
// on demand and ProgressRequester to ask watches for a bookmark now; a
// backend without them skips those checks and the suite logs why.
package storagetest
