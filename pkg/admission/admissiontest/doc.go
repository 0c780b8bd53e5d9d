// Package admissiontest holds fakes for testing admission plugins: for
// kplane's own plugin tests and for users writing plugins of their own.
//
// Source is an in-memory admission.Source that models what a plugin meets
// in a server: a store, which Fetch and UpdateStatus use, and a cache in
// front of it, which Get and List read and which may lag behind the store
// (AddUncached, SetLagging). The store assigns resourceVersions as a real
// one does, UpdateStatus checks them and answers Conflict when the object
// has moved on, and List's revision changes whenever the cache's objects
// of a resource do. A Source is safe for concurrent use.
package admissiontest
