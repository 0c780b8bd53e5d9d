package authentication

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// ServiceAccountClaims are the claims of a ServiceAccount token, as
// kube-apiserver writes them: the registered JWT claims and the private
// "kubernetes.io" claim naming the ServiceAccount and what the token is
// bound to.
type ServiceAccountClaims struct {
	Issuer    string   `json:"iss,omitempty"`
	Subject   string   `json:"sub,omitempty"`
	Audience  Audience `json:"aud,omitempty"`
	Expiry    int64    `json:"exp,omitempty"`
	NotBefore int64    `json:"nbf,omitempty"`
	IssuedAt  int64    `json:"iat,omitempty"`
	ID        string   `json:"jti,omitempty"`
	// Kubernetes is the private claim; nil in tokens of other issuers.
	Kubernetes *KubernetesClaims `json:"kubernetes.io,omitempty"`
}

// KubernetesClaims is the "kubernetes.io" claim of a ServiceAccount token.
type KubernetesClaims struct {
	Namespace      string     `json:"namespace,omitempty"`
	ServiceAccount ObjectRef  `json:"serviceaccount"`
	Pod            *ObjectRef `json:"pod,omitempty"`
	Secret         *ObjectRef `json:"secret,omitempty"`
	Node           *ObjectRef `json:"node,omitempty"`
	// WarnAfter, in seconds since the epoch, is when a client using the
	// token should be warned that it is stale.
	WarnAfter int64 `json:"warnafter,omitempty"`
}

// ObjectRef names an object in a token by name and uid.
type ObjectRef struct {
	Name string `json:"name,omitempty"`
	UID  string `json:"uid,omitempty"`
}

// Audience is a token's aud claim: one string or a list of them in JSON,
// always a list here.
type Audience []string

// UnmarshalJSON accepts a string or a list of strings.
func (a *Audience) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*a = Audience{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return errors.New("aud must be a string or a list of strings")
	}
	*a = many
	return nil
}

// ServiceAccountUsername returns the user name of a ServiceAccount:
// system:serviceaccount:<namespace>:<name>.
func ServiceAccountUsername(namespace, name string) string {
	return ServiceAccountPrefix + namespace + ":" + name
}

// SplitServiceAccountUsername returns the namespace and name of a
// ServiceAccount user name, and ok=false when the name is not one.
func SplitServiceAccountUsername(username string) (namespace, name string, ok bool) {
	rest, found := strings.CutPrefix(username, ServiceAccountPrefix)
	if !found {
		return "", "", false
	}
	namespace, name, found = strings.Cut(rest, ":")
	if !found || namespace == "" || name == "" || strings.Contains(name, ":") {
		return "", "", false
	}
	return namespace, name, true
}

// ServiceAccountGroups returns the groups of every ServiceAccount of
// namespace: system:serviceaccounts and system:serviceaccounts:<namespace>.
func ServiceAccountGroups(namespace string) []string {
	return []string{ServiceAccountsGroup, ServiceAccountsGroup + ":" + namespace}
}

// TokenBinding is what a ServiceAccount token is issued for: the
// ServiceAccount, and at most one of a pod (optionally with its node) or
// a secret, or a node alone.
type TokenBinding struct {
	ServiceAccount *corev1.ServiceAccount
	Pod            *corev1.Pod
	Secret         *corev1.Secret
	Node           *corev1.Node
}

// NewServiceAccountClaims returns the claims of a token for b issued by
// issuer at now, valid for ttl to audiences, with the token id jti.
func NewServiceAccountClaims(issuer string, b TokenBinding, audiences []string, now time.Time, ttl time.Duration, jti string) (*ServiceAccountClaims, error) {
	sa := b.ServiceAccount
	if sa == nil {
		return nil, errors.New("authentication: token claims: no ServiceAccount")
	}
	if b.Pod != nil && b.Secret != nil {
		return nil, errors.New("authentication: token claims: a token binds to a pod or a secret, not both")
	}
	c := &ServiceAccountClaims{
		Issuer:    issuer,
		Subject:   ServiceAccountUsername(sa.Namespace, sa.Name),
		Audience:  Audience(append([]string(nil), audiences...)),
		IssuedAt:  now.Unix(),
		NotBefore: now.Unix(),
		Expiry:    now.Add(ttl).Unix(),
		ID:        jti,
		Kubernetes: &KubernetesClaims{
			Namespace:      sa.Namespace,
			ServiceAccount: ObjectRef{Name: sa.Name, UID: string(sa.UID)},
		},
	}
	if p := b.Pod; p != nil {
		if p.Namespace != sa.Namespace {
			return nil, fmt.Errorf("authentication: token claims: pod %s/%s is not in the ServiceAccount's namespace", p.Namespace, p.Name)
		}
		c.Kubernetes.Pod = &ObjectRef{Name: p.Name, UID: string(p.UID)}
	}
	if s := b.Secret; s != nil {
		if s.Namespace != sa.Namespace {
			return nil, fmt.Errorf("authentication: token claims: secret %s/%s is not in the ServiceAccount's namespace", s.Namespace, s.Name)
		}
		c.Kubernetes.Secret = &ObjectRef{Name: s.Name, UID: string(s.UID)}
	}
	if n := b.Node; n != nil {
		c.Kubernetes.Node = &ObjectRef{Name: n.Name, UID: string(n.UID)}
	}
	return c, nil
}
