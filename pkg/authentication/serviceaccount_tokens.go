package authentication

import (
	"context"
	"crypto"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
)

// ServiceAccountGetter reads the live objects a ServiceAccount token
// names, so that a token stops working once they are gone. Each method
// returns an error (any error: it is not shown to the client) when the
// object does not exist. Implementations are safe for concurrent use.
type ServiceAccountGetter interface {
	GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)
	GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
	GetNode(ctx context.Context, name string) (*corev1.Node, error)
}

// The extra keys of a ServiceAccount user, as kube-apiserver names them.
const (
	ExtraPodName      = "authentication.kubernetes.io/pod-name"
	ExtraPodUID       = "authentication.kubernetes.io/pod-uid"
	ExtraNodeName     = "authentication.kubernetes.io/node-name"
	ExtraNodeUID      = "authentication.kubernetes.io/node-uid"
	ExtraCredentialID = "authentication.kubernetes.io/credential-id"
)

// tokenLeeway is the clock skew allowed on exp, nbf and iat, as
// kube-apiserver allows it.
const tokenLeeway = 60 * time.Second

// ServiceAccountTokensConfig configures ServiceAccountTokens.
type ServiceAccountTokensConfig struct {
	// Issuers are the iss values accepted (--service-account-issuer may
	// be given more than once). Required.
	Issuers []string
	// Keys verify signatures: a token signed by any of them is accepted
	// (--service-account-key-file may list many). Required.
	Keys []crypto.PublicKey
	// Audiences are the API audiences (--api-audiences): a token must be
	// for at least one. Default Issuers[0].
	Audiences []string
	// Getter reads the objects tokens name. Required.
	Getter ServiceAccountGetter
	// Clock is the time tokens are checked at. Default the real clock.
	Clock clock.PassiveClock
}

// ServiceAccountTokens authenticates ServiceAccount tokens (JWTs) as
// kube-apiserver does: the signature must verify with one of the keys,
// the issuer be accepted, one audience be an API audience, the token be
// within exp and nbf (60 s of leeway), and the ServiceAccount and the pod,
// secret or node it is bound to still exist with the uid in the token (a
// bound object deleted more than 60 s ago counts as gone). Tokens of other
// issuers are not handled, so that other token authenticators may try.
//
// ServiceAccountTokens is safe for concurrent use.
type ServiceAccountTokens struct {
	issuers   []string
	keys      []verifyKey
	audiences []string
	getter    ServiceAccountGetter
	clock     clock.PassiveClock
	// signed holds the claims of tokens (by SHA-256) whose signature
	// verified, until they expire; the claims are not changed.
	signed *verifiedCache[*ServiceAccountClaims]
}

// verifyKey is a public key with its JWS algorithm and key id.
type verifyKey struct {
	key      crypto.PublicKey
	alg, kid string
}

var _ TokenAuthenticator = (*ServiceAccountTokens)(nil)

// NewServiceAccountTokens returns a ServiceAccountTokens for cfg.
func NewServiceAccountTokens(cfg ServiceAccountTokensConfig) (*ServiceAccountTokens, error) {
	switch {
	case len(cfg.Issuers) == 0:
		return nil, errors.New("authentication: service account tokens: Issuers is required")
	case len(cfg.Keys) == 0:
		return nil, errors.New("authentication: service account tokens: Keys is required")
	case cfg.Getter == nil:
		return nil, errors.New("authentication: service account tokens: Getter is required")
	}
	if len(cfg.Audiences) == 0 {
		cfg.Audiences = cfg.Issuers[:1]
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	v := &ServiceAccountTokens{
		issuers:   slices.Clone(cfg.Issuers),
		audiences: slices.Clone(cfg.Audiences),
		getter:    cfg.Getter,
		clock:     cfg.Clock,
		signed:    newVerifiedCache[*ServiceAccountClaims](verifiedCacheSize),
	}
	for _, k := range cfg.Keys {
		alg, err := algorithmFor(k)
		if err != nil {
			return nil, err
		}
		kid, err := KeyID(k)
		if err != nil {
			return nil, err
		}
		v.keys = append(v.keys, verifyKey{key: k, alg: alg, kid: kid})
	}
	return v, nil
}

// AuthenticateToken implements TokenAuthenticator.
func (v *ServiceAccountTokens) AuthenticateToken(ctx context.Context, token string) (*User, bool, error) {
	if len(token) > maxTokenBytes {
		return nil, false, nil
	}
	now := v.clock.Now()
	key := sha256.Sum256([]byte(token))
	c, ok := v.signed.get(key, now)
	if !ok {
		hdr, payload, sig, input, err := splitJWS(token)
		if err != nil {
			return nil, false, nil // not a JWT: another authenticator's token
		}
		c = &ServiceAccountClaims{}
		if err := json.Unmarshal(payload, c); err != nil {
			return nil, false, nil
		}
		if !slices.Contains(v.issuers, c.Issuer) {
			return nil, false, nil
		}
		if !v.verify(hdr, input, sig) {
			return nil, false, errors.New("service account token: invalid signature")
		}
		if c.Expiry != 0 {
			// The signature stays valid; the claims are checked below on
			// every use, the live objects too.
			v.signed.put(key, c, time.Unix(c.Expiry, 0).Add(tokenLeeway))
		}
	}
	switch {
	case c.Expiry == 0:
		return nil, false, errors.New("service account token: no expiry")
	case now.After(time.Unix(c.Expiry, 0).Add(tokenLeeway)):
		return nil, false, errors.New("service account token: expired")
	case c.NotBefore != 0 && now.Add(tokenLeeway).Before(time.Unix(c.NotBefore, 0)):
		return nil, false, errors.New("service account token: not valid yet")
	case c.IssuedAt != 0 && now.Add(tokenLeeway).Before(time.Unix(c.IssuedAt, 0)):
		return nil, false, errors.New("service account token: issued in the future")
	}
	if !slices.ContainsFunc(c.Audience, func(a string) bool { return slices.Contains(v.audiences, a) }) {
		return nil, false, fmt.Errorf("service account token: audiences %q are not among the API audiences %q", []string(c.Audience), v.audiences)
	}
	k := c.Kubernetes
	if k == nil || k.Namespace == "" || k.ServiceAccount.Name == "" || k.ServiceAccount.UID == "" {
		return nil, false, errors.New("service account token: no kubernetes.io claim naming the ServiceAccount")
	}
	if c.Subject != ServiceAccountUsername(k.Namespace, k.ServiceAccount.Name) {
		return nil, false, errors.New("service account token: sub does not name the ServiceAccount of the kubernetes.io claim")
	}
	return v.checkLive(ctx, c, now)
}

// verify reports whether one of the keys signed input: the key the header
// names first, then, as kube-apiserver does, every other.
func (v *ServiceAccountTokens) verify(hdr jwsHeader, input string, sig []byte) bool {
	for pass := range 2 {
		for _, k := range v.keys {
			if (k.kid == hdr.Kid) != (pass == 0) || k.alg != hdr.Alg {
				continue
			}
			if verifyJWS(hdr.Alg, k.key, input, sig) {
				return true
			}
		}
	}
	return false
}

// checkLive checks that the objects c names exist with their uids and
// returns the user c identifies.
func (v *ServiceAccountTokens) checkLive(ctx context.Context, c *ServiceAccountClaims, now time.Time) (*User, bool, error) {
	k := c.Kubernetes
	ns := k.Namespace
	// An object deleted (deletionTimestamp set) longer ago than this no
	// longer vouches for the token.
	deletedBefore := now.Add(-tokenLeeway)
	deleted := func(dt *metav1.Time) bool { return dt != nil && dt.Time.Before(deletedBefore) }
	sa, err := v.getter.GetServiceAccount(ctx, ns, k.ServiceAccount.Name)
	if err != nil {
		return nil, false, fmt.Errorf("service account token: ServiceAccount %s/%s: %w", ns, k.ServiceAccount.Name, err)
	}
	if string(sa.UID) != k.ServiceAccount.UID {
		return nil, false, fmt.Errorf("service account token: ServiceAccount UID (%s) does not match claim (%s)", sa.UID, k.ServiceAccount.UID)
	}
	if deleted(sa.DeletionTimestamp) {
		return nil, false, fmt.Errorf("service account token: ServiceAccount %s/%s has been deleted", ns, sa.Name)
	}
	u := &User{
		Name:   ServiceAccountUsername(ns, sa.Name),
		UID:    string(sa.UID),
		Groups: ServiceAccountGroups(ns),
		Extra:  map[string][]string{},
	}
	if ref := k.Secret; ref != nil {
		s, err := v.getter.GetSecret(ctx, ns, ref.Name)
		if err != nil {
			return nil, false, fmt.Errorf("service account token: bound secret %s/%s: %w", ns, ref.Name, err)
		}
		if string(s.UID) != ref.UID {
			return nil, false, fmt.Errorf("service account token: secret UID (%s) does not match claim (%s)", s.UID, ref.UID)
		}
		if deleted(s.DeletionTimestamp) {
			return nil, false, fmt.Errorf("service account token: bound secret %s/%s has been deleted", ns, s.Name)
		}
	}
	if ref := k.Pod; ref != nil {
		p, err := v.getter.GetPod(ctx, ns, ref.Name)
		if err != nil {
			return nil, false, fmt.Errorf("service account token: bound pod %s/%s: %w", ns, ref.Name, err)
		}
		if string(p.UID) != ref.UID {
			return nil, false, fmt.Errorf("service account token: pod UID (%s) does not match claim (%s)", p.UID, ref.UID)
		}
		if deleted(p.DeletionTimestamp) {
			return nil, false, fmt.Errorf("service account token: bound pod %s/%s has been deleted", ns, p.Name)
		}
		u.Extra[ExtraPodName] = []string{p.Name}
		u.Extra[ExtraPodUID] = []string{string(p.UID)}
	}
	if ref := k.Node; ref != nil {
		if k.Pod == nil {
			// A token bound to a node alone needs the node to exist; the
			// node of a pod-bound token only describes where the pod runs.
			n, err := v.getter.GetNode(ctx, ref.Name)
			if err != nil {
				return nil, false, fmt.Errorf("service account token: bound node %s: %w", ref.Name, err)
			}
			if string(n.UID) != ref.UID {
				return nil, false, fmt.Errorf("service account token: node UID (%s) does not match claim (%s)", n.UID, ref.UID)
			}
			if deleted(n.DeletionTimestamp) {
				return nil, false, fmt.Errorf("service account token: bound node %s has been deleted", n.Name)
			}
		}
		u.Extra[ExtraNodeName] = []string{ref.Name}
		u.Extra[ExtraNodeUID] = []string{ref.UID}
	}
	if c.ID != "" {
		u.Extra[ExtraCredentialID] = []string{"JTI=" + c.ID}
	}
	if len(u.Extra) == 0 {
		u.Extra = nil
	}
	return u, true, nil
}
