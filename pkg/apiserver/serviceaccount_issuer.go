package apiserver

import (
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kplane/kplane/pkg/authentication"
	"github.com/kplane/kplane/pkg/storage"
)

// ServiceAccountIssuerConfig makes the server issue ServiceAccount tokens
// (the TokenRequest API, serviceaccounts/{name}/token), authenticate them,
// and serve its OpenID Connect discovery documents, as kube-apiserver's
// --service-account-* flags do. The zero value issues and accepts none.
type ServiceAccountIssuerConfig struct {
	// Issuer is the iss of the tokens issued (--service-account-issuer).
	// Required when Signer or Keys is set. When it is an https URL the
	// server serves /.well-known/openid-configuration and /openid/v1/jwks.
	Issuer string
	// AcceptedIssuers are further issuers whose tokens are accepted (the
	// later --service-account-issuer values), for moving to a new issuer.
	AcceptedIssuers []string
	// Signer signs the tokens issued (--service-account-signing-key-file).
	// Nil: no tokens are issued (the token subresource is not served) but
	// tokens signed by Keys are still accepted.
	Signer *authentication.TokenSigner
	// Keys verify tokens (--service-account-key-file, which may list many).
	// The Signer's public key is always accepted besides them.
	Keys []crypto.PublicKey
	// APIAudiences are the audiences a token must name one of to
	// authenticate, and the default audiences of TokenRequests
	// (--api-audiences). Default [Issuer].
	APIAudiences []string
	// MaxTokenExpiration caps the expirationSeconds of TokenRequests
	// (--service-account-max-token-expiration); longer requests are
	// shortened with a warning. 0: no cap.
	MaxTokenExpiration time.Duration
	// JWKSURI is the jwks_uri of the discovery document
	// (--service-account-jwks-uri). Default the issuer's scheme and host
	// followed by /openid/v1/jwks.
	JWKSURI string
}

// The paths of the issuer's OpenID Connect discovery documents.
const (
	oidcConfigPath = "/.well-known/openid-configuration"
	oidcJWKSPath   = "/openid/v1/jwks"
)

// issuer is the server's ServiceAccount token issuer.
type issuer struct {
	cfg ServiceAccountIssuerConfig
	// keys verify tokens: the Signer's public key first, then Keys.
	keys []crypto.PublicKey
	// discovery and jwks are the encoded documents, nil when the issuer
	// is not an https URL (they are not served then).
	discovery, jwks []byte
}

// setupAuth builds the server's authentication from cfg. Authentication is
// on when cfg.Authenticator is set or ServiceAccount tokens are accepted.
func (s *Server) setupAuth() error {
	ic := s.cfg.ServiceAccountIssuer
	if ic.Signer != nil || len(ic.Keys) > 0 {
		if ic.Issuer == "" {
			return errors.New("apiserver: ServiceAccountIssuer.Issuer is required with a Signer or Keys")
		}
		if len(ic.APIAudiences) == 0 {
			ic.APIAudiences = []string{ic.Issuer}
		}
		is := &issuer{cfg: ic}
		if ic.Signer != nil {
			is.keys = append(is.keys, ic.Signer.PublicKey())
		}
		is.keys = append(is.keys, ic.Keys...)
		if err := is.buildDiscovery(); err != nil {
			return err
		}
		tokens, err := authentication.NewServiceAccountTokens(authentication.ServiceAccountTokensConfig{
			Issuers:   append([]string{ic.Issuer}, ic.AcceptedIssuers...),
			Keys:      is.keys,
			Audiences: ic.APIAudiences,
			Getter:    storeGetter{s: s},
			Clock:     s.clock,
		})
		if err != nil {
			return fmt.Errorf("apiserver: %w", err)
		}
		s.issuer = is
		s.authn = authentication.Union(s.cfg.Authenticator, authentication.Bearer(tokens))
		return nil
	}
	if s.cfg.Authenticator != nil {
		s.authn = authentication.Union(s.cfg.Authenticator)
	}
	return nil
}

// buildDiscovery encodes the discovery documents of an https issuer.
func (is *issuer) buildDiscovery() error {
	u, err := url.Parse(is.cfg.Issuer)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		// As kube-apiserver: an issuer that is not an https URL has no
		// discovery documents.
		return nil
	}
	jwksURI := is.cfg.JWKSURI
	if jwksURI == "" {
		jwksURI = (&url.URL{Scheme: "https", Host: u.Host, Path: oidcJWKSPath}).String()
	}
	var jwks struct {
		Keys []authentication.JWK `json:"keys"`
	}
	algs := map[string]bool{}
	seen := map[string]bool{}
	for _, k := range is.keys {
		j, err := authentication.PublicJWK(k)
		if err != nil {
			return fmt.Errorf("apiserver: service account key: %w", err)
		}
		if seen[j.Kid] {
			continue
		}
		seen[j.Kid] = true
		algs[j.Alg] = true
		jwks.Keys = append(jwks.Keys, j)
	}
	algList := make([]string, 0, len(algs))
	for a := range algs {
		algList = append(algList, a)
	}
	sort.Strings(algList)
	if is.jwks, err = json.Marshal(jwks); err != nil {
		return err
	}
	is.discovery, err = json.Marshal(struct {
		Issuer        string   `json:"issuer"`
		JWKSURI       string   `json:"jwks_uri"`
		ResponseTypes []string `json:"response_types_supported"`
		SubjectTypes  []string `json:"subject_types_supported"`
		SigningAlgs   []string `json:"id_token_signing_alg_values_supported"`
	}{is.cfg.Issuer, jwksURI, []string{"id_token"}, []string{"public"}, algList})
	return err
}

// serveIssuerDiscovery answers the issuer's discovery documents and
// reports whether r asked for one.
func (s *Server) serveIssuerDiscovery(w http.ResponseWriter, r *http.Request) bool {
	var body []byte
	var contentType string
	switch r.URL.Path {
	case oidcConfigPath:
		contentType = "application/json"
		if s.issuer != nil {
			body = s.issuer.discovery
		}
	case oidcJWKSPath:
		contentType = "application/jwk-set+json"
		if s.issuer != nil {
			body = s.issuer.jwks
		}
	default:
		return false
	}
	if body == nil {
		s.writeError(w, r, notFound())
		return true
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		s.writeError(w, r, methodNotAllowed(r))
		return true
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", "public, max-age=3600")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(body)
	}
	return true
}

// storeGetter reads the objects ServiceAccount tokens name from the
// server's own stores.
type storeGetter struct {
	s *Server
	// consistent reads the newest state only, never the watch cache's.
	consistent bool
}

var _ authentication.ServiceAccountGetter = storeGetter{}

func (g storeGetter) get(ctx context.Context, resource, namespace, name string, out runtime.Object) error {
	res := g.s.lookup(corev1.SchemeGroupVersion.WithResource(resource))
	if res == nil {
		return fmt.Errorf("%s are not served", resource)
	}
	if name == "" || strings.Contains(name, "/") {
		return fmt.Errorf("invalid %s name %q", resource, name)
	}
	// From the watch cache when there is one, as kube-apiserver reads
	// them from its informers; what it does not hold yet is read live.
	key := res.key(namespace, name)
	if g.consistent {
		return res.store.Get(ctx, key, storage.GetOptions{}, out)
	}
	if err := res.store.Get(ctx, key, storage.GetOptions{ResourceVersion: "0"}, out); err == nil {
		return nil
	}
	return res.store.Get(ctx, key, storage.GetOptions{}, out)
}

// GetServiceAccount implements authentication.ServiceAccountGetter.
func (g storeGetter) GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	out := &corev1.ServiceAccount{}
	return out, g.get(ctx, "serviceaccounts", namespace, name, out)
}

// GetPod implements authentication.ServiceAccountGetter.
func (g storeGetter) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	out := &corev1.Pod{}
	return out, g.get(ctx, "pods", namespace, name, out)
}

// GetSecret implements authentication.ServiceAccountGetter.
func (g storeGetter) GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	out := &corev1.Secret{}
	return out, g.get(ctx, "secrets", namespace, name, out)
}

// GetNode implements authentication.ServiceAccountGetter.
func (g storeGetter) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	out := &corev1.Node{}
	return out, g.get(ctx, "nodes", "", name, out)
}

// servesTokenRequest reports whether res has the serviceaccounts/token
// subresource: it does when the server issues tokens.
func (s *Server) servesTokenRequest(res *resource) bool {
	return s.issuer != nil && s.issuer.cfg.Signer != nil && res.info.GVK.Group == "" && res.info.Resource == "serviceaccounts"
}
