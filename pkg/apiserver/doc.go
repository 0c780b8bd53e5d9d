// Package apiserver serves the Kubernetes HTTP API over a storage.Backend:
// discovery, the get, list, watch, create, update, patch, delete and
// deletecollection verbs on the resources of package registry, their status
// and scale subresources, health, version and Prometheus metrics.
//
// Where kube-apiserver's behaviour is observable on the wire, the server
// matches it: paths, query parameters, metav1.Status errors with the same
// reasons and codes, resourceVersion concurrency, watch streams of
// newline-delimited JSON events with bookmarks and watch-list, field
// validation warnings and dry runs. Request and response bodies are JSON
// (YAML is accepted and served too); protobuf requests are refused with 415
// and protobuf responses fall back to JSON when the client allows it.
//
// A Server is safe for concurrent use. New starts no goroutines; Run serves
// a listener until its context ends and returns after every request handler,
// open watches included, has finished.
package apiserver
