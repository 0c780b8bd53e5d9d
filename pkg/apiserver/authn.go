package apiserver

import (
	"net/http"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kplane/kplane/pkg/authentication"
)

// The request path, in order: authentication (authn.go), impersonation
// (impersonation.go), authorization (authz.go), then the routing of
// handler.go. The user each request is served as is in its context
// (authentication.UserFrom).

// AnonymousConfig says which requests without credentials are served as
// system:anonymous (group system:unauthenticated), as kube-apiserver's
// --anonymous-auth and its anonymous authentication conditions do. It
// applies only when authentication is on (Config.Authenticator or
// ServiceAccount tokens set); then a request without credentials to any
// other path is answered 401 Unauthorized. Anonymous requests that are let
// through are still authorized like any other.
type AnonymousConfig struct {
	// Disabled refuses every request without credentials, health and
	// version included (--anonymous-auth=false).
	Disabled bool
	// Paths are the paths anonymous requests may reach: an entry is a
	// path served exactly, or a prefix ending in "/*" that also covers
	// the paths below it; "*" is every path (kube-apiserver's anonymous
	// authentication without conditions). Default DefaultAnonymousPaths.
	Paths []string
}

// DefaultAnonymousPaths are the paths anonymous requests may reach by
// default: the health checks, the version, and the ServiceAccount
// issuer's discovery documents (which the authorizer may still refuse).
var DefaultAnonymousPaths = []string{
	"/healthz", "/healthz/*", "/livez", "/livez/*", "/readyz", "/readyz/*",
	"/version", "/version/",
	oidcConfigPath, oidcJWKSPath,
}

// anonymousAllowed reports whether a request for path without credentials
// is served as the anonymous user.
func (s *Server) anonymousAllowed(path string) bool {
	if s.cfg.Anonymous.Disabled {
		return false
	}
	paths := s.cfg.Anonymous.Paths
	if paths == nil {
		paths = DefaultAnonymousPaths
	}
	return slices.ContainsFunc(paths, func(p string) bool {
		if p == "*" || p == path {
			return true
		}
		prefix, ok := strings.CutSuffix(p, "*")
		return ok && strings.HasSuffix(prefix, "/") && strings.HasPrefix(path, prefix)
	})
}

// withAuthentication serves r as the user its credentials name (see
// authenticate), or answers 401.
func (s *Server) withAuthentication(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok := s.authenticate(w, r)
		if !ok {
			return
		}
		next.ServeHTTP(w, r.WithContext(authentication.WithUser(r.Context(), u)))
	})
}

// withImpersonation serves r as the user its Impersonate-* headers name,
// when it may impersonate them (see impersonate).
func (s *Server) withImpersonation(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, ok := s.impersonate(w, r)
		if !ok {
			return
		}
		next.ServeHTTP(w, r)
	})
}

// withAuthorization passes on only what the authorizer allows.
func (s *Server) withAuthorization(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.authorize(w, r) {
			next.ServeHTTP(w, r)
		}
	})
}

// filter authenticates, impersonates and authorizes r, returning the
// request to serve, or answers it and returns false; for /metrics, which
// the metrics wrapper answers before the filters run.
func (s *Server) filter(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	u, ok := s.authenticate(w, r)
	if !ok {
		return r, false
	}
	r = r.WithContext(authentication.WithUser(r.Context(), u))
	r, ok = s.impersonate(w, r)
	if !ok {
		return r, false
	}
	return r, s.authorize(w, r)
}

// protectMetrics runs the filters on /metrics, which the metrics wrapper
// (outside serveHTTP) answers itself, before passing it to next.
func (s *Server) protectMetrics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			var ok bool
			if r, ok = s.filter(w, r); !ok {
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// authenticate returns the sender of r, or answers 401 and returns false.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (*authentication.User, bool) {
	if s.authn == nil {
		// In-process callers (tests, wrapping handlers) may have put the
		// user on the context already; nothing from the wire can.
		if u := authentication.UserFrom(r.Context()); u != nil {
			return u, true
		}
		return legacyUser(r), true
	}
	u, ok, err := s.authn.AuthenticateRequest(r)
	switch {
	case err != nil:
		s.log.Debug("unable to authenticate the request", "path", r.URL.Path, "err", err)
	case ok:
		return u, true
	case s.anonymousAllowed(r.URL.Path):
		return authentication.AnonymousUser(), true
	}
	s.writeError(w, r, apierrors.NewUnauthorized("Unauthorized"))
	return nil, false
}

// legacyUser is the sender of r when authentication is off: the subject of
// a client certificate the TLS listener verified, else the anonymous user.
// Nothing is refused.
func legacyUser(r *http.Request) *authentication.User {
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.PeerCertificates) > 0 {
		subject := r.TLS.PeerCertificates[0].Subject
		return authentication.WithAuthenticatedGroup(&authentication.User{
			Name: subject.CommonName, Groups: slices.Clone(subject.Organization),
		})
	}
	return authentication.AnonymousUser()
}

// requestUser is the user r is served as.
func requestUser(r *http.Request) *authentication.User {
	if u := authentication.UserFrom(r.Context()); u != nil {
		return u
	}
	return legacyUser(r)
}
