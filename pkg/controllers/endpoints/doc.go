// Package endpoints is the Endpoints controller: for every Service with a
// selector it keeps the core/v1 Endpoints object of the same name listing
// the selected pods, as Kubernetes' endpoints controller does (Endpoints
// are deprecated in favour of EndpointSlices, but still served and kept).
//
// Guarantees:
//   - Subsets group addresses by the ports they offer, in the compact
//     N-to-M form (ports offered by the same addresses share a subset),
//     sorted. A ready pod is an address, an unready one a not-ready
//     address; with publishNotReadyAddresses every pod is ready, and
//     terminating pods are listed only then. Pods without an IP and
//     finished pods are left out. A headless Service without ports lists
//     addresses without ports.
//   - At most MaxCapacity (1000) addresses: beyond, they are truncated as
//     Kubernetes truncates them (not-ready first) and the object is
//     annotated endpoints.kubernetes.io/over-capacity=truncated.
//   - Labels are the Service's, plus service.kubernetes.io/headless for a
//     headless Service; writes carry the
//     endpoints.kubernetes.io/last-change-trigger-time annotation.
//   - Writes only on change; deletes the Endpoints when the Service goes
//     (Endpoints found at start without a Service too, leader-election
//     locks excepted), and makes them again when deleted while the Service
//     exists. Services without a selector (the API server's "kubernetes"
//     Service among them) and ExternalName Services are left alone.
//
// The EndpointSlice mirroring controller (Endpoints written by users into
// slices) is not part of kplane.
//
// The controller reads Services, pods and Endpoints from a shared
// informers.Factory and does not start it. Run waits for the caches, runs
// the workers until its context ends and returns once they have exited.
package endpoints
