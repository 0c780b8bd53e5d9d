// Package policy is the ValidatingAdmissionPolicy admission plugin
// (admissionregistration.k8s.io/v1), with Kubernetes' semantics.
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
// Policies and bindings are read from the admission Source and compiled
// once per revision of their lists (a policy is recompiled when its
// resourceVersion changes). The plugin is safe for concurrent use and
// starts no goroutines; RunStatus is the loop that writes the policies'
// type-checking status.
package policy
