package authorization

import (
	"context"

	"github.com/kplane/kplane/pkg/authentication"
)

// Attributes describe a request to authorize, as Kubernetes'
// authorizer.Attributes: who, which verb, and either a resource (group,
// version, resource, subresource, namespace, name) or a non-resource path.
type Attributes struct {
	User *authentication.User
	// Verb is the API verb for resource requests (get, list, watch,
	// create, update, patch, delete, deletecollection, and the special
	// verbs bind, escalate, impersonate, approve, sign, use ...) and the
	// lowercase HTTP method for non-resource requests (get, post, put ...).
	Verb string
	// ResourceRequest tells a resource request from a non-resource one.
	ResourceRequest bool
	// Path is the request path of a non-resource request.
	Path        string
	Namespace   string
	APIGroup    string
	APIVersion  string
	Resource    string
	Subresource string
	Name        string
}

// Decision is an authorizer's answer.
type Decision int

const (
	// DecisionNoOpinion lets the next authorizer decide; when none allows,
	// the request is denied.
	DecisionNoOpinion Decision = iota
	// DecisionAllow allows the request.
	DecisionAllow
	// DecisionDeny denies the request at once.
	DecisionDeny
)

// Authorizer decides whether a request is allowed. The reason explains the
// decision to humans (it appears in access reviews). Implementations are
// safe for concurrent use.
type Authorizer interface {
	Authorize(ctx context.Context, a Attributes) (d Decision, reason string, err error)
}

// AuthorizerFunc adapts a function to an Authorizer.
type AuthorizerFunc func(ctx context.Context, a Attributes) (Decision, string, error)

// Authorize calls f.
func (f AuthorizerFunc) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	return f(ctx, a)
}

// ResourceRule and NonResourceRule are what a user may do, as
// SelfSubjectRulesReview reports it.
type ResourceRule struct {
	Verbs, APIGroups, Resources, ResourceNames []string
}

// NonResourceRule is a rule over non-resource URLs.
type NonResourceRule struct {
	Verbs, NonResourceURLs []string
}

// RuleResolver lists the rules that apply to a user in a namespace (""
// for cluster-wide rules only). incomplete is set when some rules could
// not be resolved (a binding to a missing role, say); err explains.
type RuleResolver interface {
	RulesFor(ctx context.Context, u *authentication.User, namespace string) (res []ResourceRule, nonRes []NonResourceRule, incomplete bool, err error)
}
