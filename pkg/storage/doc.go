// Package storage defines the versioned, watchable store behind the kplane
// API server: one Backend with a single, strictly increasing revision, and a
// per-resource Interface over it with get, list, create, guaranteed update,
// delete and watch, following kube-apiserver's storage semantics.
package storage
