// Package client is a REST client for Kubernetes-compatible API servers,
// kplane's own and any real cluster's.
//
// A Client (New) holds the connection settings: server address, TLS, bearer
// token, user agent, an optional client-side rate limit and retries. LoadKubeconfig
// builds those settings from kubeconfig files the way kubectl reads them.
//
// ResourceClient is a generic, typed client for one resource, built from a
// Resource descriptor: NewResource(c, Pods) reads and writes *corev1.Pod
// values, and NewResource(c, Resource[*T]{...}) does the same for any other
// type. It speaks the API's JSON wire protocol exactly as client-go does:
// the same paths, query parameters, content types and request bodies.
//
// Server-side apply: ResourceClient.Apply and ApplyStatus (and the same
// methods of DynamicResourceClient) send a configuration, the fields one
// field manager (ApplyOptions.FieldManager, required) has an opinion on,
// as a PATCH of type application/apply-patch+yaml. The server merges it
// into the object, creating it when missing, records the manager's fields
// in metadata.managedFields, removes the fields the manager applied before
// and no longer does, and refuses with 409 Conflict a change to a field
// another manager owns unless ApplyOptions.Force. The configuration is an
// *unstructured.Unstructured, a map, or an apply configuration struct
// (such as client-go's); a typed object (*appsv1.Deployment) is a poor
// one, as it carries unset fields that the apply would claim (see Apply).
//
// For resources without Go types, such as custom resources:
//   - DynamicClient (NewDynamic) reads and writes *unstructured.Unstructured
//     objects of any group, version and resource, with the verbs, options,
//     errors and retries of ResourceClient, whose code it runs. As in
//     client-go, its namespace alone decides the URL; list items of built-in
//     resources, which the server sends without apiVersion and kind, get the
//     list's. ListerWatcher adapts it for informers.
//   - MetadataClient (NewMetadata) reads, watches, patches and deletes only
//     the metadata of objects, as *metav1.PartialObjectMetadata, asking the
//     server for the meta.k8s.io/v1 PartialObjectMetadata form and reading
//     the metadata of whole objects from servers that do not answer with it.
//   - DiscoveryClient (NewDiscovery) reads the server's groups and resources
//     from the legacy discovery documents (/api, /apis, /apis/{group}/{version}).
//   - RESTMapper (NewRESTMapper) implements meta.ResettableRESTMapper from
//     discovery: kind to resource and scope, resource or short name to kind,
//     preferred versions and categories. It reads discovery on first use and
//     again, at most once per MinRefreshInterval, when a lookup finds nothing,
//     so that resources defined later are found.
//
// Guarantees:
//   - A Client, its ResourceClients, and the dynamic, metadata and discovery
//     clients and the RESTMapper are safe for concurrent use.
//   - Every failure the server reports comes back as an *apierrors.StatusError,
//     so apierrors.IsNotFound, IsConflict, IsInvalid, IsGone and the other
//     predicates work on the returned error; a response that is not a
//     metav1.Status becomes a StatusError derived from the HTTP status code.
//     An apply's conflict is a Conflict StatusError whose Details.Causes
//     name each contested field and its manager.
//   - ResourceClient satisfies cache.ListerWatcher (so do the ListerWatcher
//     adapters of the dynamic and metadata clients). A Watch delivers the
//     server's events in order; ERROR events carry the server's *metav1.Status.
//     Stop is idempotent, closes the response body and the event channel, and
//     returns only after the goroutine reading the stream has exited.
//   - The rate limit (Config.QPS) applies to every request except watches,
//     which are long-lived; it is off by default.
//   - A Config.TokenSource is asked for the bearer token of every request;
//     one that is also a TokenInvalidator gets a 401's token back and the
//     request is sent once more with its next token. Config.WithoutCredentials
//     derives the settings of a client for another identity of the same
//     server, without the client certificate that would otherwise win.
//   - Like client-go, a request answered with 429 or 500-504 and a
//     Retry-After header is sent again after that wait, up to
//     Config.MaxRetries times (10 by default); other failures are returned
//     at once. Server warnings go to Config.WarningHandler when one is set.
package client
