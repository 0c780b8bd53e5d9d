// Package schema turns the OpenAPI v3 schema of a CustomResourceDefinition
// version into the behaviour kube-apiserver gives custom resources of that
// version: the structural-schema and CRD-schema checks run when a CRD is
// written, and the pruning, defaulting and value validation run on every
// custom resource read from a request.
//
// Guarantees:
//
//   - Messages and field paths are Kubernetes' own (apiextensions.k8s.io/v1,
//     with every tightening that applies to newly created CRDs), so a client
//     sees the same 422 causes it would see from kube-apiserver. Value
//     validation is done by k8s.io/kube-openapi's validate.SchemaValidator, as
//     kube-apiserver does.
//   - Objects are JSON-decoded values: map[string]any, []any, string, bool,
//     nil, and numbers as int64 or float64. Objects decoded by
//     sigs.k8s.io/json (integers as int64, as kube-apiserver decodes them)
//     and by encoding/json (every number a float64) validate alike. No JSON
//     value makes Prune, Default or Validate panic.
//   - Prune and Default mutate the object they are given and nothing else;
//     default values are deep-copied, so objects never share memory with a
//     schema.
//   - A Structural and a Validator are immutable once built and safe for
//     concurrent use. Errors and lists are sorted where Kubernetes sorts them.
//
// Not done here: compiling and running x-kubernetes-validations (CEL)
// rules, and validation ratcheting on update.
package schema
