// Package registry describes each resource kplane serves: its names for
// discovery and routing, defaulting, validation, the fields a field selector
// may use, and the rules of its status and scale subresources.
//
// Every resource is a Strategy. Resource[T] builds one from a few typed
// functions, so adding a resource is one small file declaring a Resource
// value; Builtin lists them all. Strategies hold no state and are safe for
// concurrent use. They never touch storage: the API server calls them around
// its reads and writes.
package registry
