// Package cel compiles and evaluates the CEL expressions of admission:
// the matchConditions of webhooks and the expressions of admission
// policies (matchConditions, variables, validations, messageExpression,
// auditAnnotations), with the variables Kubernetes gives them.
//
// Every expression sees object and oldObject (the request's objects as
// JSON-like maps, null when absent), request (the AdmissionRequest fields
// Kubernetes exposes), namespaceObject (the request's namespace, null for
// cluster-scoped requests), authorizer and authorizer.requestResource
// (Kubernetes' authorization library, checked with the server's
// authorizer for the requesting user). Policies with a paramKind also see
// params, and policies see variables: their named variables, each
// evaluated at most once per evaluation context, lazily, when first read.
//
// Programs apply Kubernetes' cost limits: one evaluation stops at
// kplane/pkg/cel.PerCallLimit, and evaluations sharing a budget (the
// validations of one binding) stop when RuntimeCostBudget is spent. A
// runtime error is an evaluation error naming the expression, in
// Kubernetes' words.
//
// Compilers are used by one goroutine while compiling; the Programs they
// return are immutable and safe for concurrent use. An Activation belongs
// to one evaluation of one request.
package cel
