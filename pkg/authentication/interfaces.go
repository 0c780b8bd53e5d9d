package authentication

import (
	"context"
	"net/http"
)

// User is an authenticated identity, as Kubernetes' user.Info: a name, a
// uid, groups and extra attributes. A User is not changed after it is
// returned by an Authenticator; it is safe to share.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// The names and groups Kubernetes gives special meaning.
const (
	Anonymous             = "system:anonymous"
	AllUnauthenticated    = "system:unauthenticated"
	AllAuthenticated      = "system:authenticated"
	SystemPrivilegedGroup = "system:masters"
	NodesGroup            = "system:nodes"
	ServiceAccountPrefix  = "system:serviceaccount:"
	ServiceAccountsGroup  = "system:serviceaccounts"
)

// Authenticator identifies the sender of a request. It returns ok=false
// with a nil error when the request carries no credentials it handles (the
// next authenticator is tried), and an error when it carries credentials
// that are invalid (the request is refused with 401). Implementations are
// safe for concurrent use.
type Authenticator interface {
	AuthenticateRequest(r *http.Request) (u *User, ok bool, err error)
}

// AuthenticatorFunc adapts a function to an Authenticator.
type AuthenticatorFunc func(r *http.Request) (*User, bool, error)

// AuthenticateRequest calls f.
func (f AuthenticatorFunc) AuthenticateRequest(r *http.Request) (*User, bool, error) { return f(r) }

type userKey struct{}

// WithUser returns a context that carries u.
func WithUser(ctx context.Context, u *User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the user ctx carries, or nil.
func UserFrom(ctx context.Context) *User {
	u, _ := ctx.Value(userKey{}).(*User)
	return u
}
