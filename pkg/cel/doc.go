// Package cel holds the CEL environment kplane shares between CustomResourceDefinition
// validation rules and admission policies.
//
// NewBaseEnv returns an environment with the language options and the function
// libraries Kubernetes offers to expressions (lists, regex, urls, quantity, ip, cidr,
// format, semver, and cel-go's strings, sets, lists, optional types and two-variable
// comprehensions), configured with Kubernetes' runtime cost limit. The environment
// declares no variables; callers extend it.
//
// SchemaDeclType maps an OpenAPI v3 schema to CEL types, and the resulting DeclType
// provides the type provider, the size estimates that bound the static cost of an
// expression, and the conversion of JSON-decoded values into CEL values.
//
// Everything in the package is immutable once built and safe for concurrent use.
package cel
