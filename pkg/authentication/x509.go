package authentication

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"time"

	"k8s.io/utils/clock"
)

// X509Config configures an X509 authenticator.
type X509Config struct {
	// ClientCA holds the certificate authorities client certificates must
	// chain to (--client-ca-file). Required.
	ClientCA *x509.CertPool
	// Clock is the time certificates are verified at. Default the real clock.
	Clock clock.PassiveClock
}

// X509 authenticates requests by their TLS client certificate, as
// kube-apiserver's x509 authenticator: the chain must verify against the
// client CA pool for client authentication (the clientAuth extended key
// usage) at the current time; the user is the leaf's common name and the
// groups its organizations. The TLS listener only requests certificates
// (tls.RequestClientCert or tls.VerifyClientCertIfGiven): X509 verifies
// them itself, so a certificate of another CA is refused with an error,
// never taken as no credentials. A certificate without a common name names
// no user and is refused too.
//
// X509 is safe for concurrent use.
type X509 struct {
	chainVerifier
}

// chainVerifier verifies the certificate chains clients send against a
// pool of roots for client authentication at the current time, as
// kube-apiserver's x509 verifier does for --client-ca-file and
// --requestheader-client-ca-file. X509 and RequestHeader each hold one for
// their own roots. It is safe for concurrent use.
type chainVerifier struct {
	roots *x509.CertPool
	clock clock.PassiveClock
	// verified holds the chains (by the SHA-256 of the certificates sent)
	// that verified, with the span in which all their certificates are
	// valid: the same chain verifies against the same roots within it.
	verified *verifiedCache[validity]
}

// newChainVerifier returns a chainVerifier for roots reading time from clk
// (the real clock when nil).
func newChainVerifier(roots *x509.CertPool, clk clock.PassiveClock) chainVerifier {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return chainVerifier{roots: roots, clock: clk, verified: newVerifiedCache[validity](verifiedCacheSize)}
}

// validity is the span in which every certificate of a chain is valid.
type validity struct{ notBefore, notAfter time.Time }

var _ Authenticator = (*X509)(nil)

// NewX509 returns an X509 authenticator for cfg.
func NewX509(cfg X509Config) (*X509, error) {
	if cfg.ClientCA == nil {
		return nil, errors.New("authentication: x509: ClientCA is required")
	}
	return &X509{chainVerifier: newChainVerifier(cfg.ClientCA, cfg.Clock)}, nil
}

// AuthenticateRequest implements Authenticator. A request without a client
// certificate is not handled (ok false, nil error).
func (a *X509) AuthenticateRequest(r *http.Request) (*User, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	leaf := r.TLS.PeerCertificates[0]
	if err := a.verify(r.TLS.PeerCertificates); err != nil {
		return nil, false, err
	}
	if leaf.Subject.CommonName == "" {
		return nil, false, fmt.Errorf("certificate %s has no common name: it names no user", certificateID(leaf))
	}
	return &User{
		Name:   leaf.Subject.CommonName,
		Groups: append([]string(nil), leaf.Subject.Organization...),
	}, true, nil
}

// verify verifies the chain sent, the leaf first, for client
// authentication at the current time. The error names the leaf.
func (a *chainVerifier) verify(sent []*x509.Certificate) error {
	now := a.clock.Now()
	h := sha256.New()
	for _, c := range sent {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(c.Raw)))
		h.Write(n[:])
		h.Write(c.Raw)
	}
	var key [32]byte
	h.Sum(key[:0])
	if v, ok := a.verified.get(key, now); ok && !now.Before(v.notBefore) && !now.After(v.notAfter) {
		return nil
	}
	leaf := sent[0]
	opts := x509.VerifyOptions{
		Roots:         a.roots,
		Intermediates: x509.NewCertPool(),
		CurrentTime:   now,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	for _, c := range sent[1:] {
		opts.Intermediates.AddCert(c)
	}
	chains, err := leaf.Verify(opts)
	if err != nil {
		return fmt.Errorf("verifying certificate %s failed: %w", certificateID(leaf), err)
	}
	// Any chain found will do later; remember the first one's span.
	v := validity{notBefore: leaf.NotBefore, notAfter: leaf.NotAfter}
	for _, c := range chains[0] {
		if c.NotBefore.After(v.notBefore) {
			v.notBefore = c.NotBefore
		}
		if c.NotAfter.Before(v.notAfter) {
			v.notAfter = c.NotAfter
		}
	}
	a.verified.put(key, v, v.notAfter)
	return nil
}

// certificateID names a certificate in errors and logs.
func certificateID(c *x509.Certificate) string {
	return fmt.Sprintf("SN=%s, CN=%q, issuer=%q", c.SerialNumber, c.Subject.CommonName, c.Issuer.String())
}
