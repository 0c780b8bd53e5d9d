// Package celrules compiles and evaluates the x-kubernetes-validations rules
// of CustomResourceDefinition schemas, with kube-apiserver's semantics and
// error messages.
//
// ValidateRules is the CRD-write check: every rule compiles, returns a bool,
// fits the static cost budgets, and uses oldSelf only where old and new values
// can be correlated. NewValidator compiles a schema's rules once; its Validate
// evaluates them against a custom resource and, on update, its old state.
//
// A Validator is immutable and safe for concurrent use; Validate does not
// retain or modify the objects it is given.
package celrules
