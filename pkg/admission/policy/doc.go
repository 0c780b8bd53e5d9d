// Package policy is the ValidatingAdmissionPolicy and
// MutatingAdmissionPolicy admission plugins (admissionregistration.k8s.io/v1),
// with Kubernetes' semantics.
//
// A policy applies to a request when one of its bindings names it and both
// the policy's matchConstraints and the binding's matchResources match the
// request (namespace and object selectors, resource rules with
// resourceNames, excludeResourceRules, matchPolicy); requests for the
// configuration of admission itself (webhook configurations, policies and
// bindings) are never subject to policies. For each matching binding, and
// each of its params (paramRef by name or selector), the policy's
// matchConditions, validations and auditAnnotations are evaluated with the
// CEL environment of package kplane/pkg/admission/cel; a failed validation
// is acted on as the binding's validationActions say (Deny refuses the
// request with the validation's reason, Warn adds a warning, Audit an
// audit annotation), an error or a misconfiguration as the policy's
// failurePolicy says. Messages, reasons and codes are Kubernetes'.
//
// A MutatingAdmissionPolicy matches as a validating one does (its
// bindings have no validationActions). The mutations of the policies that
// apply are applied one after another, in the order of policy name,
// binding name and param, each policy's in its declared order and each
// seeing the object as the one before left it: a JSONPatch mutation's
// expression returns JSONPatch{op, path, from, value} operations, applied
// as RFC 6902 (a failed test operation leaves the object as it is); an
// ApplyConfiguration mutation's returns an Object{...} apply
// configuration, its nested objects named by their field path
// (Object.spec.template), merged into the object by the Merger the server
// supplies. A failed mutation, or a misconfiguration, refuses the request
// under failurePolicy Fail (403 with Kubernetes' message) and is ignored
// under Ignore. A policy with reinvocationPolicy IfNeeded is applied again
// when the chain reinvokes the mutating plugins because the object changed
// after it was applied.
//
// Policies and bindings are read from the admission Source and compiled
// once per revision of their lists (a policy is recompiled when its
// resourceVersion changes). The plugins are safe for concurrent use and
// start no goroutines; RunStatus is the loop that writes the validating
// policies' type-checking status.
package policy
