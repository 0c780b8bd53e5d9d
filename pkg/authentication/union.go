package authentication

import (
	"errors"
	"net/http"
	"slices"
)

// Union returns an Authenticator trying authns in order, as
// kube-apiserver's union authenticator: the first that identifies the
// sender wins; one that fails does not stop the others (a token file does
// not know ServiceAccount tokens); when none identifies the sender and
// some failed, the errors are returned joined, which refuses the request.
// Nil entries are skipped. The users returned are given the group
// system:authenticated (WithAuthenticatedGroup).
func Union(authns ...Authenticator) Authenticator {
	list := slices.DeleteFunc(slices.Clone(authns), func(a Authenticator) bool { return a == nil })
	return AuthenticatorFunc(func(r *http.Request) (*User, bool, error) {
		var errs []error
		for _, a := range list {
			u, ok, err := a.AuthenticateRequest(r)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if ok {
				return WithAuthenticatedGroup(u), true, nil
			}
		}
		return nil, false, errors.Join(errs...)
	})
}

// WithAuthenticatedGroup returns u with the group system:authenticated
// added, as kube-apiserver adds it to every authenticated user, unless u
// is the anonymous user or already in system:authenticated or
// system:unauthenticated. u is not changed.
func WithAuthenticatedGroup(u *User) *User {
	if u.Name == Anonymous || slices.Contains(u.Groups, AllAuthenticated) || slices.Contains(u.Groups, AllUnauthenticated) {
		return u
	}
	c := *u
	c.Groups = append(slices.Clip(slices.Clone(u.Groups)), AllAuthenticated)
	return &c
}

// AnonymousUser returns the user of a request without credentials:
// system:anonymous in the group system:unauthenticated.
func AnonymousUser() *User {
	return &User{Name: Anonymous, Groups: []string{AllUnauthenticated}}
}
