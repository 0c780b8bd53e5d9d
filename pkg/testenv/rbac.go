package testenv

import (
	"context"
	"net/http"
	"slices"
	"sync"

	"github.com/kplane/kplane/pkg/authentication"
)

// WithRBAC turns authorization on: the server authorizes every request
// with Kubernetes' RBAC, over its bootstrap policy (cluster-admin, admin,
// edit, view, the system roles) and the Roles and bindings the test
// creates. Env.Client and the Kubeconfig act as an administrator (group
// system:masters); Env.ConfigFor and Env.ServiceAccountConfig give
// credentials that are only what the bindings grant, so that a
// controller's test can run it under exactly its own role and fail where
// the role lacks a rule. Without WithRBAC every authenticated request is
// allowed.
func WithRBAC() Option {
	return func(o *options) { o.rbac = true }
}

// adminUser is who Env.Client acts as.
var adminUser = &authentication.User{Name: "kplane-testenv-admin", Groups: []string{authentication.SystemPrivilegedGroup, authentication.AllAuthenticated}}

// users maps the bearer tokens of an environment to the users they
// authenticate, for the server's authentication under WithRBAC. It is
// safe for concurrent use.
type users struct {
	mu     sync.Mutex
	tokens map[string]*authentication.User
}

// add registers a new token for u and returns it.
func (us *users) add(u *authentication.User) string {
	tok := randomToken()
	us.mu.Lock()
	defer us.mu.Unlock()
	if us.tokens == nil {
		us.tokens = map[string]*authentication.User{}
	}
	us.tokens[tok] = u
	return tok
}

// known reports whether tok is one of the environment's tokens.
func (us *users) known(tok string) bool {
	us.mu.Lock()
	defer us.mu.Unlock()
	_, ok := us.tokens[tok]
	return ok
}

// authenticator identifies requests by their bearer token, or by the
// environment's client certificate (verified by the TLS listener, whose
// only CA is the environment's own).
func (us *users) authenticator() authentication.Authenticator {
	bearer := authentication.Bearer(authentication.TokenAuthenticatorFunc(func(_ context.Context, tok string) (*authentication.User, bool, error) {
		us.mu.Lock()
		defer us.mu.Unlock()
		u, ok := us.tokens[tok]
		return u, ok, nil
	}))
	return authentication.AuthenticatorFunc(func(r *http.Request) (*authentication.User, bool, error) {
		if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
			leaf := r.TLS.PeerCertificates[0]
			return &authentication.User{Name: leaf.Subject.CommonName, Groups: slices.Clone(leaf.Subject.Organization)}, true, nil
		}
		return bearer.AuthenticateRequest(r)
	})
}

// ConfigFor returns connection settings that authenticate as user, in
// groups (and system:authenticated), with a bearer token of their own and
// no client certificate. Under WithRBAC the user may do only what Roles
// and ClusterRoles bound to it (or to its groups) grant; without it,
// anything. Build a client with client.New(rc.ClientConfig()), or a
// client-go rest.Config from its fields.
func (e *Env) ConfigFor(user string, groups ...string) RESTConfig {
	u := authentication.WithAuthenticatedGroup(&authentication.User{Name: user, Groups: slices.Clone(groups)})
	return RESTConfig{Host: e.REST.Host, CAData: e.REST.CAData, BearerToken: e.users.add(u)}
}

// ServiceAccountConfig returns connection settings that authenticate as
// the ServiceAccount namespace/name (user
// system:serviceaccount:<namespace>:<name>, groups system:serviceaccounts
// and system:serviceaccounts:<namespace>), as a pod running under it
// would. The ServiceAccount object need not exist.
func (e *Env) ServiceAccountConfig(namespace, name string) RESTConfig {
	u := authentication.WithAuthenticatedGroup(&authentication.User{
		Name:   authentication.ServiceAccountUsername(namespace, name),
		Groups: authentication.ServiceAccountGroups(namespace),
	})
	return RESTConfig{Host: e.REST.Host, CAData: e.REST.CAData, BearerToken: e.users.add(u)}
}
