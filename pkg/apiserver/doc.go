// Package apiserver serves the Kubernetes HTTP API over a storage.Backend:
// discovery (the legacy per-group-version documents, and the aggregated
// apidiscovery.k8s.io/v2 documents on /api and /apis with which kubectl and
// client-go learn every resource in two requests, cached with an ETag and
// chosen by the Accept header as kube-apiserver chooses), the get, list, watch, create, update, patch, delete and
// deletecollection verbs on the resources of package registry, their status
// and scale subresources (and pods/binding), OpenAPI documents, health,
// version and Prometheus metrics.
//
// Where kube-apiserver's behaviour is observable on the wire, the server
// matches it: paths, query parameters, metav1.Status errors with the same
// reasons and codes, resourceVersion concurrency, generation bumped on spec
// changes only, finalizers and graceful deletion, watch streams of
// newline-delimited JSON events with bookmarks and watch-list, field
// validation warnings and dry runs.
//
// Encodings: request bodies are JSON, YAML or Kubernetes protobuf (what
// client-go's typed clients send); patches are JSON patch, merge patch,
// strategic merge patch or server-side apply (application/apply-patch+yaml,
// see apply.go and internal/fieldmanager; every write keeps the object's
// managedFields). Responses are negotiated from
// the Accept header as kube-apiserver negotiates them (response.go): JSON,
// YAML or Kubernetes protobuf, with q-values and wildcards (which pick
// JSON); metav1.Table (JSON or YAML only) for kubectl get; and
// PartialObjectMetadata(List), in any encoding, for metadata-only clients.
// Custom resources have no protobuf schema: a client that also accepts
// JSON gets JSON, one that accepts only protobuf a 406. Watch streams are
// newline-delimited JSON or length-delimited protobuf WatchEvents
// (application/vnd.kubernetes.protobuf;stream=watch), each change encoded
// once for all the watchers sharing an encoding. Every failure is a
// metav1.Status, in the encoding negotiated for it; no failed request
// writes.
//
// Every request passes, before routing, authentication (Config.Authenticator
// and ServiceAccount tokens: invalid credentials get 401, and so do
// requests without any except on the Config.Anonymous paths), impersonation
// (Impersonate-* headers, each value authorized) and authorization
// (Config.Authorizer: denials are kube-apiserver's 403 messages). With the
// zero Config all three are off and every request is served. The server
// issues ServiceAccount tokens (serviceaccounts/{name}/token) and serves its
// issuer's OpenID Connect discovery documents when Config.ServiceAccountIssuer
// says so.
//
// Load: at most Config.MaxRequestsInFlight read-only and
// Config.MaxMutatingRequestsInFlight mutating requests are served at once
// (400 and 200, as kube-apiserver); the excess is answered 429 with
// Retry-After: 1 without being handled, so it changed nothing. Watches, the
// kubelet streams, health checks and system:masters are never refused.
// Requests other than those long-running ones are answered 504 after
// Config.RequestTimeout (60s). With a Config.Auditor each request is
// recorded in the audit.k8s.io/v1 format; without one auditing costs
// nothing.
//
// A Server is safe for concurrent use. New starts no goroutines; Run serves
// a listener until its context ends and returns after every request handler,
// open watches included, has finished.
package apiserver
