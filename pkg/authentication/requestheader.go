package authentication

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"k8s.io/utils/clock"
)

// RequestHeaderConfig configures a RequestHeader authenticator, as
// kube-apiserver's --requestheader-* flags do.
type RequestHeaderConfig struct {
	// ClientCA holds the certificate authorities the front proxy's client
	// certificate must chain to (--requestheader-client-ca-file).
	// Required.
	ClientCA *x509.CertPool
	// AllowedNames are the common names a proxy certificate may have
	// (--requestheader-allowed-names). Empty allows any certificate
	// ClientCA verifies.
	AllowedNames []string
	// UsernameHeaders are the headers holding the user's name, the first
	// non-empty one wins. At least one is required.
	UsernameHeaders []string
	// UIDHeaders are the headers holding the user's uid, the first
	// non-empty one wins. Optional.
	UIDHeaders []string
	// GroupHeaders are the headers holding the user's groups; every value
	// of every one of them is a group. Optional.
	GroupHeaders []string
	// ExtraHeaderPrefixes are the prefixes of the headers holding the
	// user's extra attributes: the rest of the header's name, lowercased
	// and percent-decoded, is the key. Optional.
	ExtraHeaderPrefixes []string
	// Clock is the time proxy certificates are verified at. Default the
	// real clock.
	Clock clock.PassiveClock
}

// RequestHeader authenticates requests relayed by a trusted front proxy
// (kube-aggregator, an authenticating proxy), as kube-apiserver's
// requestheader authenticator: the proxy presents a client certificate
// that must verify against the request-header CA for client
// authentication at the current time, and, when names are allowed, have
// one of them as its common name; the user is then read from the request
// headers the proxy set. Once it has authenticated a request, RequestHeader
// deletes those headers from it, so handlers do not see them.
//
// A request without a client certificate, or whose certificate verifies
// but carries no username header, is not handled. A certificate that does
// not verify, or whose common name is not allowed, is an error: the union
// of authenticators goes on (a client certificate of the client CA still
// authenticates through X509) but the headers are never believed.
// Headers of requests not authenticated by RequestHeader are left in
// place; nothing but RequestHeader reads them.
//
// RequestHeader is safe for concurrent use.
type RequestHeader struct {
	chainVerifier
	allowedNames []string
	// The header names, canonicalized; prefixes lowercased.
	usernameHeaders, uidHeaders, groupHeaders []string
	extraPrefixes                             []string
}

var _ Authenticator = (*RequestHeader)(nil)

// NewRequestHeader returns a RequestHeader authenticator for cfg. It
// refuses a config without ClientCA or username headers, and one with an
// empty header name or prefix.
func NewRequestHeader(cfg RequestHeaderConfig) (*RequestHeader, error) {
	if cfg.ClientCA == nil {
		return nil, errors.New("authentication: requestheader: ClientCA is required")
	}
	if len(cfg.UsernameHeaders) == 0 {
		return nil, errors.New("authentication: requestheader: at least one username header is required")
	}
	a := &RequestHeader{
		chainVerifier: newChainVerifier(cfg.ClientCA, cfg.Clock),
		allowedNames:  slices.Clone(cfg.AllowedNames),
	}
	for _, l := range []struct {
		what string
		in   []string
		out  *[]string
		norm func(string) string
	}{
		{"username header", cfg.UsernameHeaders, &a.usernameHeaders, http.CanonicalHeaderKey},
		{"uid header", cfg.UIDHeaders, &a.uidHeaders, http.CanonicalHeaderKey},
		{"group header", cfg.GroupHeaders, &a.groupHeaders, http.CanonicalHeaderKey},
		{"extra header prefix", cfg.ExtraHeaderPrefixes, &a.extraPrefixes, strings.ToLower},
	} {
		for _, h := range l.in {
			h = strings.TrimSpace(h)
			if h == "" {
				return nil, fmt.Errorf("authentication: requestheader: empty %s", l.what)
			}
			*l.out = append(*l.out, l.norm(h))
		}
	}
	return a, nil
}

// AuthenticateRequest implements Authenticator.
func (a *RequestHeader) AuthenticateRequest(r *http.Request) (*User, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	leaf := r.TLS.PeerCertificates[0]
	if err := a.verify(r.TLS.PeerCertificates); err != nil {
		return nil, false, fmt.Errorf("request header: %w", err)
	}
	if len(a.allowedNames) > 0 && !slices.Contains(a.allowedNames, leaf.Subject.CommonName) {
		return nil, false, fmt.Errorf("request header: certificate %s: the common name is not one of the allowed names", certificateID(leaf))
	}
	name := firstValue(r.Header, a.usernameHeaders)
	if name == "" {
		return nil, false, nil
	}
	u := &User{Name: name, UID: firstValue(r.Header, a.uidHeaders)}
	for _, h := range a.groupHeaders {
		for _, g := range r.Header[h] {
			if g != "" {
				u.Groups = append(u.Groups, g)
			}
		}
	}
	// Prefixes first, so that the values of one key keep the order of the
	// prefixes configured.
	for _, p := range a.extraPrefixes {
		for h, vs := range r.Header {
			lower := strings.ToLower(h)
			if !strings.HasPrefix(lower, p) {
				continue
			}
			key := lower[len(p):]
			if k, err := url.PathUnescape(key); err == nil {
				key = k
			}
			if u.Extra == nil {
				u.Extra = map[string][]string{}
			}
			u.Extra[key] = append(u.Extra[key], vs...)
		}
	}
	a.clearHeaders(r.Header)
	return u, true, nil
}

// clearHeaders deletes the headers the identity was read from.
func (a *RequestHeader) clearHeaders(h http.Header) {
	for _, l := range [][]string{a.usernameHeaders, a.uidHeaders, a.groupHeaders} {
		for _, name := range l {
			delete(h, name)
		}
	}
	for name := range h {
		lower := strings.ToLower(name)
		if slices.ContainsFunc(a.extraPrefixes, func(p string) bool { return strings.HasPrefix(lower, p) }) {
			delete(h, name)
		}
	}
}

// firstValue returns the first non-empty value of the headers names, in
// order, or "".
func firstValue(h http.Header, names []string) string {
	for _, n := range names {
		if v := h.Get(n); v != "" {
			return v
		}
	}
	return ""
}
