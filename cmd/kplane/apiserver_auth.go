package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/kplane/kplane/pkg/apiserver"
	"github.com/kplane/kplane/pkg/authentication"
)

// authOptions are the authentication and authorization flags of
// `kplane apiserver` (and `kplane up`), named as kube-apiserver's.
type authOptions struct {
	authorizationMode  string
	anonymousAuth      bool
	tokenAuthFile      string
	saIssuers          []string
	saKeyFiles         []string
	saSigningKeyFile   string
	apiAudiences       []string
	saMaxTokenDuration time.Duration
	requestHeader      requestHeaderOptions
}

// requestHeaderOptions are kube-apiserver's --requestheader-* flags: whom
// to believe, and which headers to read, when a front proxy relays the
// identity it authenticated. Like kube-apiserver's they have no defaults
// (kubeadm passes X-Remote-User, X-Remote-Group and X-Remote-Extra-).
type requestHeaderOptions struct {
	clientCAFile        string
	allowedNames        []string
	usernameHeaders     []string
	uidHeaders          []string
	groupHeaders        []string
	extraHeaderPrefixes []string
}

// defaultServiceAccountIssuer is the issuer of ServiceAccount tokens when
// --service-account-issuer is not given, the one kubeadm configures.
const defaultServiceAccountIssuer = "https://kubernetes.default.svc.cluster.local"

func (o *authOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.authorizationMode, "authorization-mode", apiserver.AuthorizationModeRBAC,
		"RBAC (Kubernetes' role-based access control, the default) or AlwaysAllow (INSECURE: every authenticated or anonymous request may do anything; for throwaway tests only)")
	f.BoolVar(&o.anonymousAuth, "anonymous-auth", true,
		"serve requests without credentials as system:anonymous on the health checks, /version and the ServiceAccount issuer's discovery documents (all other paths answer 401); false answers 401 everywhere")
	f.StringVar(&o.tokenAuthFile, "token-auth-file", "", "CSV file of static bearer tokens: token,user,uid,\"group1,group2\"")
	f.StringSliceVar(&o.saIssuers, "service-account-issuer", []string{defaultServiceAccountIssuer},
		"issuer (iss) of the ServiceAccount tokens issued; further values are issuers whose tokens are still accepted")
	f.StringSliceVar(&o.saKeyFiles, "service-account-key-file", nil, "PEM files of public (or private) keys that verify ServiceAccount tokens, besides the signing key's")
	f.StringVar(&o.saSigningKeyFile, "service-account-signing-key-file", "", "PEM private key (ECDSA P-256 or RSA) that signs ServiceAccount tokens (default <data-dir>/pki/sa.key, generated on first start)")
	f.StringSliceVar(&o.apiAudiences, "api-audiences", nil, "audiences a ServiceAccount token must name one of, and the default audiences of TokenRequests (default the issuer)")
	f.DurationVar(&o.saMaxTokenDuration, "service-account-max-token-expiration", 0, "longest expiration a TokenRequest may ask for; longer ones are shortened (0: no limit)")
	rh := &o.requestHeader
	f.StringVar(&rh.clientCAFile, "requestheader-client-ca-file", "",
		"PEM bundle of the CAs a front proxy's client certificate must chain to before the identity in its --requestheader-username-headers is believed; turns front-proxy authentication on")
	f.StringSliceVar(&rh.allowedNames, "requestheader-allowed-names", nil,
		"common names a front proxy's client certificate may have; empty allows any certificate --requestheader-client-ca-file verifies")
	f.StringSliceVar(&rh.usernameHeaders, "requestheader-username-headers", nil, "request headers holding the user's name, the first set one wins (X-Remote-User is usual); required with --requestheader-client-ca-file")
	f.StringSliceVar(&rh.uidHeaders, "requestheader-uid-headers", nil, "request headers holding the user's uid, the first set one wins (X-Remote-Uid is usual)")
	f.StringSliceVar(&rh.groupHeaders, "requestheader-group-headers", nil, "request headers whose every value is one of the user's groups (X-Remote-Group is usual)")
	f.StringSliceVar(&rh.extraHeaderPrefixes, "requestheader-extra-headers-prefix", nil,
		"prefixes of request headers holding the user's extra attributes, keyed by the rest of the name, lowercased and percent-decoded (X-Remote-Extra- is usual)")
}

// published is what the server publishes for extension API servers, as
// kube-apiserver does: the client CA bundle and, when a front proxy is
// configured (cas not empty), its CAs and these flags.
func (o *requestHeaderOptions) published(clientCAPEM []byte, cas []*x509.Certificate) *apiserver.ExtensionAuthentication {
	a := &apiserver.ExtensionAuthentication{ClientCA: clientCAPEM}
	if len(cas) == 0 {
		return a
	}
	for _, c := range cas {
		a.RequestHeaderCA = append(a.RequestHeaderCA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	a.RequestHeaderAllowedNames = o.allowedNames
	a.RequestHeaderUsernameHeaders = o.usernameHeaders
	a.RequestHeaderUIDHeaders = o.uidHeaders
	a.RequestHeaderGroupHeaders = o.groupHeaders
	a.RequestHeaderExtraHeaderPrefixes = o.extraHeaderPrefixes
	return a
}

// authenticator returns the front-proxy authenticator the flags ask for,
// nil when --requestheader-client-ca-file is not given, and the CAs of that
// file, which the TLS listener must also ask client certificates of.
// kube-apiserver ignores the header flags without the CA file; so does
// this, with a warning.
func (o *requestHeaderOptions) authenticator(creds *pki, logger *slog.Logger) (*authentication.RequestHeader, []*x509.Certificate, error) {
	if o.clientCAFile == "" {
		if len(o.usernameHeaders)+len(o.uidHeaders)+len(o.groupHeaders)+len(o.extraHeaderPrefixes)+len(o.allowedNames) > 0 {
			logger.Warn("the --requestheader-* flags have no effect without --requestheader-client-ca-file")
		}
		return nil, nil, nil
	}
	if creds == nil {
		return nil, nil, errors.New("--requestheader-client-ca-file needs HTTPS: a front proxy is known by its client certificate, which --insecure-http cannot receive")
	}
	if len(o.usernameHeaders) == 0 {
		return nil, nil, errors.New("--requestheader-client-ca-file needs --requestheader-username-headers (usually X-Remote-User): no header would name the user")
	}
	data, err := os.ReadFile(o.clientCAFile)
	if err != nil {
		return nil, nil, fmt.Errorf("--requestheader-client-ca-file: %w", err)
	}
	var cas []*x509.Certificate
	pool := x509.NewCertPool()
	for block, rest := pem.Decode(data); block != nil; block, rest = pem.Decode(rest) {
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, nil, fmt.Errorf("--requestheader-client-ca-file %s: %w", o.clientCAFile, err)
		}
		cas = append(cas, c)
		pool.AddCert(c)
	}
	if len(cas) == 0 {
		return nil, nil, fmt.Errorf("--requestheader-client-ca-file %s holds no PEM certificate", o.clientCAFile)
	}
	a, err := authentication.NewRequestHeader(authentication.RequestHeaderConfig{
		ClientCA:            pool,
		AllowedNames:        o.allowedNames,
		UsernameHeaders:     o.usernameHeaders,
		UIDHeaders:          o.uidHeaders,
		GroupHeaders:        o.groupHeaders,
		ExtraHeaderPrefixes: o.extraHeaderPrefixes,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("--requestheader-*: %w", err)
	}
	return a, cas, nil
}

// apply configures authentication and authorization on cfg. creds is the
// server's PKI (nil when serving plain HTTP: then no client certificate
// can be verified and only bearer tokens authenticate). With a front
// proxy's CA, apply also replaces cfg.TLS with creds' configuration that
// asks for certificates of that CA too.
func (o *authOptions) apply(cfg *apiserver.Config, dataDir string, creds *pki, logger *slog.Logger) error {
	switch o.authorizationMode {
	case apiserver.AuthorizationModeRBAC:
	case apiserver.AuthorizationModeAlwaysAllow:
		logger.Warn("INSECURE: --authorization-mode=AlwaysAllow lets every request do anything, anonymous ones on the open paths included; use it for throwaway tests only")
	default:
		return fmt.Errorf("--authorization-mode %q: want RBAC or AlwaysAllow", o.authorizationMode)
	}
	if len(o.saIssuers) == 0 || o.saIssuers[0] == "" {
		return errors.New("--service-account-issuer must not be empty")
	}
	cfg.AuthorizationMode = o.authorizationMode
	var authns []authentication.Authenticator
	// The front proxy first, as kube-apiserver orders them: when one CA
	// signs both, a proxy's certificate relays the identity in its
	// headers instead of being taken for its own.
	rh, rhCAs, err := o.requestHeader.authenticator(creds, logger)
	if err != nil {
		return err
	}
	if rh != nil {
		authns = append(authns, rh)
		// The listener asks for certificates of either CA; each
		// authenticator verifies against its own.
		creds.requestHeaderCAs = rhCAs
		cfg.TLS = creds.tlsConfig()
	}
	if creds != nil {
		cfg.ExtensionAuthentication = o.requestHeader.published(creds.clientCAPEM, rhCAs)
		x, err := authentication.NewX509(authentication.X509Config{ClientCA: creds.clientCAs})
		if err != nil {
			return err
		}
		authns = append(authns, x)
	}
	if o.tokenAuthFile != "" {
		tf, err := authentication.LoadTokenFile(o.tokenAuthFile)
		if err != nil {
			return fmt.Errorf("--token-auth-file: %w", err)
		}
		authns = append(authns, authentication.Bearer(tf))
	}
	if creds == nil {
		// Plain HTTP has no client certificates: like kube-apiserver's
		// old insecure port, a request without credentials is the
		// unsecured administrator. --insecure-http already warns that
		// anyone who can reach the address may do anything.
		authns = append(authns, authentication.AuthenticatorFunc(func(r *http.Request) (*authentication.User, bool, error) {
			if r.Header.Get("Authorization") != "" {
				return nil, false, nil
			}
			return &authentication.User{Name: unsecuredUser, Groups: []string{authentication.SystemPrivilegedGroup, authentication.AllAuthenticated}}, true, nil
		}))
	}
	if len(authns) > 0 {
		cfg.Authenticator = authentication.Union(authns...)
	}
	if !o.anonymousAuth {
		cfg.Anonymous.Disabled = true
	}
	keyPath := o.saSigningKeyFile
	var signer *authentication.TokenSigner
	switch {
	case keyPath == "" && creds == nil:
		// A throwaway plain-HTTP server writes no keys: its tokens
		// last as long as the process.
		signer, err = authentication.GenerateTokenSigner()
	default:
		if keyPath == "" {
			keyPath = filepath.Join(dataDir, "pki", "sa.key")
			if err := ensureSigningKey(keyPath); err != nil {
				return err
			}
		}
		signer, err = authentication.LoadTokenSigner(keyPath)
	}
	if err != nil {
		return fmt.Errorf("--service-account-signing-key-file: %w", err)
	}
	ic := apiserver.ServiceAccountIssuerConfig{
		Issuer: o.saIssuers[0], AcceptedIssuers: o.saIssuers[1:], Signer: signer,
		APIAudiences: o.apiAudiences, MaxTokenExpiration: o.saMaxTokenDuration,
	}
	for _, f := range o.saKeyFiles {
		keys, err := authentication.LoadPublicKeys(f)
		if err != nil {
			return fmt.Errorf("--service-account-key-file: %w", err)
		}
		ic.Keys = append(ic.Keys, keys...)
	}
	cfg.ServiceAccountIssuer = ic
	return nil
}

// unsecuredUser is who requests without credentials are over plain HTTP.
const unsecuredUser = "system:unsecured"

// ensureSigningKey writes a new ECDSA P-256 key (PKCS #8 PEM, 0600) to
// path unless a file is there.
func ensureSigningKey(path string) error {
	if _, err := os.Stat(path); err == nil {
		return os.Chmod(path, 0o600)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("service account signing key: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("service account signing key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("service account signing key: %w", err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("service account signing key: %w", err)
	}
	return nil
}
