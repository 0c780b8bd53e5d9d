// Package openapi builds the OpenAPI documents of kplane's API server from
// the Go types of the served resources and serves them the way
// kube-apiserver does, so that kubectl (apply, explain, client-side
// validation) and client-go's OpenAPI clients work against kplane.
//
// New builds everything once: the Swagger 2.0 document of /openapi/v2 (as
// JSON and in the gnostic protobuf encoding kubectl requests), the
// /openapi/v3 index, and one OpenAPI 3.0 document per group version. Docs
// serves the cached bytes; it never rebuilds and is safe for concurrent use.
//
// Schemas are derived by reflection, following encoding/json:
//   - definitions are named as Kubernetes names them
//     ("io.k8s.api.core.v1.Pod"), from the type's OpenAPIModelName method or
//     else from its import path with the host reversed;
//   - properties come from json tags; inline and untagged embedded structs
//     contribute their fields; descriptions come from SwaggerDoc methods;
//   - a property is required when its json tag has neither omitempty nor
//     omitzero. Kubernetes decides from +optional comments, invisible at run
//     time; k8s.io/api declares optional fields omitempty, so the two agree
//     on the fields the tests compare (Container requires name, PodSpec
//     containers, DeploymentSpec selector and template, a list its items);
//   - types with OpenAPISchemaType methods (Time, MicroTime, Duration,
//     Quantity, IntOrString) are scalar definitions as Kubernetes publishes
//     them: Time and MicroTime are date-time strings, IntOrString has format
//     int-or-string, and in OpenAPI 3 Quantity is oneOf string or number and
//     IntOrString oneOf integer or string; RawExtension and FieldsV1 are
//     free-form objects; []byte is a base64 string;
//   - in OpenAPI 3 a reference that carries its own description or
//     extensions is wrapped in allOf, as Kubernetes publishes it, because
//     kubectl explain and strategic merge patch read them there;
//   - patchStrategy and patchMergeKey struct tags become
//     x-kubernetes-patch-strategy and x-kubernetes-patch-merge-key, which
//     strategic merge patch reads;
//   - Kubernetes' comment markers, invisible at run time, are applied from
//     a table generated from the sources of k8s.io/api, apimachinery and
//     the CRD types (internal/markergen, run by go generate; a test fails
//     when the table is stale): +listType and +listMapKey become
//     x-kubernetes-list-type and x-kubernetes-list-map-keys (keys in the
//     order written), +mapType and +structType x-kubernetes-map-type (on
//     the property, or, for a type declared +structType=atomic such as
//     LabelSelector, on its definition), and +default the "default"
//     keyword, a ref(Constant) default taking the constant's value. These
//     are what server-side apply merges by; a +k8s: tag of declarative
//     validation is not an OpenAPI marker and is ignored, as Kubernetes'
//     generator ignores it. A merged list of scalars with no +listType is
//     marked x-kubernetes-list-type "set" (kplane's reading of the patch
//     strategy, which k8s.io/api has made explicit nearly everywhere);
//   - a field without +default gets the default Kubernetes' generator
//     gives it: {} for a struct value (not a pointer) and the zero value
//     for a scalar written even when empty (no omitempty); pointers, lists,
//     maps and types that decode themselves (Time, Quantity, IntOrString)
//     get none. Defaults are published in OpenAPI 3 only: kube-apiserver
//     prunes them from its Swagger 2.0 document. A defaulted reference is
//     wrapped in allOf;
//   - object and list definitions carry x-kubernetes-group-version-kind,
//     and every operation carries x-kubernetes-action and the kind it acts
//     on, which kubectl uses to find a kind's schema and to learn that the
//     server supports the fieldValidation parameter.
//
// Enums are not emitted.
//
// Models gives the same OpenAPI 3 schemas as values, for the
// structured-merge-diff schema of the field manager.
//
// Serving follows kube-apiserver's OpenAPI handlers: the v2 document is
// JSON or protobuf by the Accept header, and kubectl only ever asks for
// protobuf; v3 group-version documents are JSON or protobuf, each URL in
// the index carries the document's hash, a request with an outdated hash is
// redirected to the current one and one with the current hash may be cached
// for a year; every answer has an ETag and honours If-None-Match.
package openapi
