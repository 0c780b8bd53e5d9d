// Package endpointslice is the EndpointSlice controller: for every Service
// with a selector it keeps discovery.k8s.io/v1 EndpointSlices listing the
// selected pods, as Kubernetes' endpointslice-controller does.
//
// Guarantees:
//   - Only slices labelled endpointslice.kubernetes.io/managed-by=
//     endpointslice-controller.k8s.io (ControllerName) are read or written;
//     slices managed by anyone else, such as the API server's own
//     "kubernetes" slice (of a Service without a selector), are never
//     touched. Services without a selector and ExternalName Services get
//     no slices; a Service that loses its selector keeps the slices it had
//     (as in Kubernetes: its endpoints are now someone else's to manage).
//   - Slices are named generateName "<service>-", labelled
//     kubernetes.io/service-name plus the Service's own labels (and
//     service.kubernetes.io/headless for a headless Service), and owned by
//     the Service (controller reference), so the garbage collector deletes
//     them with it.
//   - A pod is an endpoint once it has an IP, until it is Succeeded or
//     Failed. Its conditions: serving is its Ready condition; terminating
//     is its deletion; ready is serving and not terminating, or always
//     with publishNotReadyAddresses. It carries nodeName, the zone
//     (topology.kubernetes.io/zone of the node), a targetRef to the pod,
//     and the pod's hostname when its subdomain names the Service.
//   - Service ports resolve per pod (a named targetPort by the containers'
//     port names and protocol); pods resolving to different port sets are
//     in different slices. Address types follow the Service's IP families.
//   - At most MaxEndpointsPerSlice (default 100) endpoints per slice,
//     packed to keep writes few, as Kubernetes packs them: endpoints stay
//     where they are, new ones fill the slices being written anyway, then
//     the unchanged slice they fill best, then new slices; emptied slices
//     are deleted, or reused for slices that would be created. A Service
//     without endpoints has one empty slice.
//   - Writes carry the endpoints.kubernetes.io/last-change-trigger-time
//     annotation. A sync whose slice cache lags behind the controller's own
//     writes is retried rather than acted on, and the informer's echo of
//     those writes does not trigger syncs.
//
// The controller reads Services, pods, EndpointSlices and nodes from a
// shared informers.Factory and does not start it. Run waits for the
// caches, runs the workers until its context ends and returns once they
// have exited. Topology hints and trafficDistribution are not set.
package endpointslice
