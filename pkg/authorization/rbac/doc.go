// Package rbac is Kubernetes' role-based access control: an
// authorization.Authorizer and authorization.RuleResolver over Roles,
// ClusterRoles, RoleBindings and ClusterRoleBindings, and the escalation
// checks the API server runs before storing one of them.
//
// Guarantees:
//   - The semantics are kube-apiserver's: a request is allowed when a rule
//     of a role bound to the user (by name, by one of its groups, or as a
//     ServiceAccount) matches its verb, API group, resource (with
//     subresource, "*" and "*/sub" forms) and resource name, or its
//     non-resource URL (exact, or a prefix ending in "*"). Rules with
//     resourceNames never match a request without a name (list, create).
//     A RoleBinding grants its role, or a ClusterRole, only in its own
//     namespace. There are no deny rules: otherwise the answer is
//     NoOpinion. Members of system:masters are allowed everything.
//   - Authorize reads the Lister only; it does not copy policy objects and
//     allocates only to build the reason of an allowed request.
//   - A binding that names a missing role is an evaluation error: the
//     other bindings still count, RulesFor reports incomplete, and the
//     reason of a NoOpinion says which role is missing.
//   - Covers and ConfirmNoEscalation decide rule coverage rule by rule, as
//     Kubernetes' escalation check does: every rule granted must be held by
//     the granting user, down to each verb, resource and resource name.
//
// An Authorizer is safe for concurrent use as long as its Lister is.
package rbac
