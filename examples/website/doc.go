// Package website is a sample operator built on kplane's controller
// toolkit, for a custom resource of its own: a Website
// (websites.examples.kplane.dev/v1alpha1, config/crd/websites.yaml) names a
// container image, a replica count and a port, and the operator keeps a
// Deployment of the same name serving it.
//
// It shows what an operator for a CustomResourceDefinition is made of:
//
//   - a Go type for the custom resource (website_types.go) used with
//     kplane's typed clients and informers through a client.Resource
//     descriptor, with the API server doing the validation the CRD's
//     schema declares (defaults, bounds, a CEL rule);
//   - informers on Websites and Deployments feeding a rate-limited queue of
//     Website keys; a Deployment's events enqueue the Website that
//     controls it (controller.EnqueueOwnerHandler);
//   - a level-triggered, idempotent sync that creates or updates the
//     Deployment, controlled by the Website (ownerReference with
//     controller and blockOwnerDeletion), and never touches a Deployment
//     of that name that someone else controls;
//   - a finalizer, examples.kplane.dev/website-cleanup, put on a Website
//     before anything is created for it: when the Website is deleted the
//     operator deletes the Deployment, waits until the server no longer
//     has it, and only then removes the finalizer;
//   - status written through the status subresource only when it changes:
//     observedGeneration, readyReplicas, and Ready and Progressing
//     conditions in Kubernetes' conventions;
//   - Events (pkg/controller/record) for what it did.
//
// website_controller.go wires the parts together; website_sync.go is the
// reconcile logic. cmd/website-operator runs it with leader election.
package website
