package controllermanager

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/pkg/client"
)

// Token lifetimes of the controllers' ServiceAccount credentials, as
// kube-controller-manager's dynamic client builder asks for them.
const (
	// ServiceAccountTokenExpiration is the expirationSeconds of the
	// TokenRequests: one hour.
	ServiceAccountTokenExpiration = time.Hour
	// serviceAccountTokenRenewal is the part of a token's lifetime after
	// which it is renewed: 80%, leaving a fifth of it to renew in.
	serviceAccountTokenRenewal = 0.8
	// serviceAccountTokenRetry is how long a token whose renewal failed
	// is used before the renewal is tried again, so that an API server
	// refusing TokenRequests is not asked before every request.
	serviceAccountTokenRetry = 10 * time.Second
)

// serviceAccountTokens is the client.TokenSource of one controller's
// client: tokens of the ServiceAccount kube-system/<name>, asked for with
// the TokenRequest API through the manager's own client (whose user may
// create serviceaccounts/token), cached and renewed once 80% of their
// lifetime has passed, or when the server refuses one (InvalidateToken).
// Before each TokenRequest it makes sure the ServiceAccount exists,
// creating it when missing, so a deleted ServiceAccount comes back as
// kube-controller-manager brings it back. It is safe for concurrent use;
// one TokenRequest is in flight at a time and the requests waiting for it
// get its token.
type serviceAccountTokens struct {
	manager   *client.Client // the manager's identity: reads and creates the ServiceAccount, requests tokens
	namespace string
	name      string
	clock     clock.PassiveClock
	logger    *slog.Logger

	mu sync.Mutex
	// token is the cached token, "" when there is none; renewAt is when
	// it is to be renewed and expiresAt when the server stops taking it.
	// Guarded by mu, which is also held through a renewal.
	token     string
	renewAt   time.Time
	expiresAt time.Time
}

var (
	_ client.TokenSource      = (*serviceAccountTokens)(nil)
	_ client.TokenInvalidator = (*serviceAccountTokens)(nil)
)

// Token returns the cached token, renewing it first when it is due. A
// failed renewal still returns the old token while it has not expired,
// and is tried again serviceAccountTokenRetry later.
func (s *serviceAccountTokens) Token(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	if s.token != "" && now.Before(s.renewAt) {
		return s.token, nil
	}
	tok, expires, err := s.request(ctx)
	if err != nil {
		if s.token != "" && now.Before(s.expiresAt) {
			s.renewAt = now.Add(serviceAccountTokenRetry)
			s.logger.Warn("renewing the controller's ServiceAccount token failed; using the current one until it expires",
				"expires", s.expiresAt, "err", err)
			return s.token, nil
		}
		return "", err
	}
	lifetime := expires.Sub(now)
	if lifetime <= 0 {
		// The server's clock is ahead of ours; trust the lifetime asked.
		lifetime = ServiceAccountTokenExpiration
		expires = now.Add(lifetime)
	}
	s.token = tok
	s.expiresAt = expires
	s.renewAt = now.Add(time.Duration(float64(lifetime) * serviceAccountTokenRenewal))
	return tok, nil
}

// InvalidateToken drops tok if it is still the cached token, so that the
// next Token asks for a new one.
func (s *serviceAccountTokens) InvalidateToken(tok string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if tok != "" && tok == s.token {
		s.logger.Info("the API server refused the controller's ServiceAccount token; renewing it")
		s.token = ""
	}
}

// request makes sure the ServiceAccount exists and asks for a token of
// it, returning the token and its expiry.
func (s *serviceAccountTokens) request(ctx context.Context) (string, time.Time, error) {
	if err := s.ensureServiceAccount(ctx); err != nil {
		return "", time.Time{}, err
	}
	exp := int64(ServiceAccountTokenExpiration / time.Second)
	// No audiences: the server's default (its API audiences) is what it
	// authenticates requests against.
	body, err := json.Marshal(&authenticationv1.TokenRequest{
		TypeMeta: metav1.TypeMeta{APIVersion: "authentication.k8s.io/v1", Kind: "TokenRequest"},
		Spec:     authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp},
	})
	if err != nil {
		return "", time.Time{}, fmt.Errorf("encode TokenRequest: %w", err)
	}
	resp, err := s.manager.Do(ctx, client.Request{
		Method: http.MethodPost,
		Path:   "/api/v1/namespaces/" + url.PathEscape(s.namespace) + "/serviceaccounts/" + url.PathEscape(s.name) + "/token",
		Body:   body,
	})
	if err != nil {
		return "", time.Time{}, fmt.Errorf("request a token of ServiceAccount %s/%s: %w", s.namespace, s.name, err)
	}
	var tr authenticationv1.TokenRequest
	if err := json.Unmarshal(resp.Body, &tr); err != nil {
		return "", time.Time{}, fmt.Errorf("decode the TokenRequest of ServiceAccount %s/%s: %w", s.namespace, s.name, err)
	}
	if tr.Status.Token == "" {
		return "", time.Time{}, fmt.Errorf("the TokenRequest of ServiceAccount %s/%s returned no token", s.namespace, s.name)
	}
	return tr.Status.Token, tr.Status.ExpirationTimestamp.Time, nil
}

// ensureServiceAccount creates the ServiceAccount when it does not exist.
func (s *serviceAccountTokens) ensureServiceAccount(ctx context.Context) error {
	sas := client.NewResource(s.manager, client.ServiceAccounts).Namespace(s.namespace)
	_, err := sas.Get(ctx, s.name, metav1.GetOptions{})
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("get ServiceAccount %s/%s: %w", s.namespace, s.name, err)
	}
	_, err = sas.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: s.namespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ServiceAccount %s/%s: %w", s.namespace, s.name, err)
	}
	if err == nil {
		s.logger.Info("created the controller's ServiceAccount")
	}
	return nil
}

// serviceAccountClient builds the client of a controller that runs as the
// ServiceAccount kube-system/name: cfg.ClientConfig without its
// credentials, with that ServiceAccount's tokens and a user agent naming
// it, as kube-controller-manager's clients do ("<agent>/<name>").
func serviceAccountClient(cfg Config, name string) (*client.Client, error) {
	cc := cfg.ClientConfig.WithoutCredentials()
	if cc.UserAgent != "" {
		cc.UserAgent += "/" + name
	}
	cc.TokenSource = &serviceAccountTokens{
		manager:   cfg.Client,
		namespace: metav1.NamespaceSystem,
		name:      name,
		clock:     cfg.Clock,
		logger:    cfg.Logger.With("serviceAccount", metav1.NamespaceSystem+"/"+name),
	}
	c, err := client.New(cc)
	if err != nil {
		return nil, fmt.Errorf("client for ServiceAccount %s/%s: %w", metav1.NamespaceSystem, name, err)
	}
	return c, nil
}
