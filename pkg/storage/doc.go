// Package storage defines the versioned, watchable store behind the kplane
// API server: one Backend with a single, strictly increasing revision, and a
// per-resource Interface over it with get, list, create, guaranteed update,
// delete and watch, following kube-apiserver's storage semantics.
//
// The contract is in interfaces.go and errors.go; every backend
// (storage/memory, storage/etcd) passes the conformance suite in
// storage/storagetest, which also pins the choices the comments leave open.
//
// Besides the contract the package holds the pieces every backend and the
// API server share, all safe for concurrent use and free of state:
//
//   - JSONCodec, a Codec over encoding/json that keeps TypeMeta as set.
//   - ParseResourceVersion, FormatResourceVersion, ObjectResourceVersion,
//     SetObjectResourceVersion and SetListResourceVersion, which read and
//     write metadata.resourceVersion as revisions.
//   - ValidateKey, ValidatePrefix, KeyPrefix and PrefixEnd: keys are paths
//     such as "/pods/default/nginx"; a recursive list or watch of
//     "/pods/default" covers exactly the keys below "/pods/default/".
//   - EncodeContinue and DecodeContinue, the continue token: base64 JSON
//     with the snapshot revision and the key to resume at, relative to the
//     listed prefix, shaped like kube-apiserver's. A bad token is an
//     ErrCodeInvalidContinue error that says what is wrong with it.
//   - Predicate.Matches and friends, and Preconditions.Check.
//
// Malformed requests (a bad key, resourceVersion, limit or option
// combination; see ValidateListOptions) fail with ErrCodeInvalidRequest and
// a message naming the bad value; nothing is written.
package storage
