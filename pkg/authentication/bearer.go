package authentication

import (
	"context"
	"errors"
	"net/http"
	"strings"
)

// TokenAuthenticator identifies the holder of a bearer token. Like an
// Authenticator it returns ok=false with a nil error for a token it does
// not know of (another may), and an error for one it knows to be invalid.
// Implementations are safe for concurrent use.
type TokenAuthenticator interface {
	AuthenticateToken(ctx context.Context, token string) (u *User, ok bool, err error)
}

// TokenAuthenticatorFunc adapts a function to a TokenAuthenticator.
type TokenAuthenticatorFunc func(ctx context.Context, token string) (*User, bool, error)

// AuthenticateToken calls f.
func (f TokenAuthenticatorFunc) AuthenticateToken(ctx context.Context, token string) (*User, bool, error) {
	return f(ctx, token)
}

// errInvalidBearerToken is the error of a bearer token no authenticator
// accepts, as kube-apiserver words it.
var errInvalidBearerToken = errors.New("invalid bearer token")

// errMalformedAuthorization is the error of an Authorization header that
// does not hold a bearer token.
var errMalformedAuthorization = errors.New(`malformed Authorization header: want "Bearer <token>"`)

// Bearer returns an Authenticator reading the token of an
// "Authorization: Bearer <token>" header, the scheme compared without
// regard to case and followed by exactly one space, as kube-apiserver
// does, and asking tokens which user holds it. A request without the
// header is not handled. Unlike kube-apiserver, which lets such a request
// fall through to the anonymous user, a header that holds no bearer token
// (another scheme, no token, a token after two spaces) is refused with an
// error: a client that sent credentials the server cannot read is told
// so with 401 rather than served as someone else.
//
// The returned Authenticator is safe for concurrent use when tokens is.
func Bearer(tokens TokenAuthenticator) Authenticator {
	return AuthenticatorFunc(func(r *http.Request) (*User, bool, error) {
		tok, present, err := BearerToken(r)
		if !present {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		u, ok, err := tokens.AuthenticateToken(r.Context(), tok)
		if err != nil {
			return nil, false, err
		}
		if !ok {
			return nil, false, errInvalidBearerToken
		}
		return u, true, nil
	})
}

// BearerToken returns the token of r's Authorization header. present
// tells whether the header is set at all; err is set when it is but
// holds no bearer token.
func BearerToken(r *http.Request) (token string, present bool, err error) {
	values := r.Header.Values("Authorization")
	if len(values) == 0 {
		return "", false, nil
	}
	if len(values) > 1 {
		return "", true, errors.New("more than one Authorization header")
	}
	auth := strings.TrimSpace(values[0])
	scheme, tok, found := strings.Cut(auth, " ")
	switch {
	case auth == "":
		return "", true, errors.New("empty Authorization header")
	case !strings.EqualFold(scheme, "bearer"):
		return "", true, errMalformedAuthorization
	case !found || tok == "":
		return "", true, errors.New("empty bearer token")
	case strings.ContainsAny(tok, " \t"):
		// "Bearer  tok" (two spaces) or "Bearer a b": kube-apiserver
		// reads no token from these either.
		return "", true, errMalformedAuthorization
	}
	return tok, true, nil
}
