// Package apiextensions serves CustomResourceDefinitions and the custom
// resources they define, as kube-apiserver's apiextensions part does.
//
// CustomResourceDefinitions is the registry strategy of
// apiextensions.k8s.io/v1 customresourcedefinitions: Kubernetes'
// defaulting and validation (names, scope, versions, schemas,
// subresources, printer columns, selectable fields, conversion), the
// status that only the server writes (accepted names, conditions, stored
// versions) and the cleanup finalizer a delete adds. AcceptNames is the
// naming decision of one CRD among the others of its group.
//
// NewCustomResource returns the strategy of one served version of an
// established CRD: objects are *unstructured.Unstructured; the status and
// scale subresources, generation, selectable fields and printer columns
// follow the CRD. The strategies are values: a changed CRD gets new ones,
// and the old ones stay valid for requests still using them. Everything
// here is safe for concurrent use.
package apiextensions
