// Package cache is the informer machinery: a thread-safe indexed store, the
// DeltaFIFO with its tombstones, the reflector that lists and watches through
// a ListerWatcher, shared informers and generic listers.
package cache
