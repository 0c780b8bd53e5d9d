// Package authorization decides whether an authenticated user may make an
// API request. Subpackage rbac implements Kubernetes' RBAC authorizer.
package authorization
