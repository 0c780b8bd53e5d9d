package authentication

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"

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
	roots *x509.CertPool
	clock clock.PassiveClock
}

var _ Authenticator = (*X509)(nil)

// NewX509 returns an X509 authenticator for cfg.
func NewX509(cfg X509Config) (*X509, error) {
	if cfg.ClientCA == nil {
		return nil, errors.New("authentication: x509: ClientCA is required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &X509{roots: cfg.ClientCA, clock: cfg.Clock}, nil
}

// AuthenticateRequest implements Authenticator. A request without a client
// certificate is not handled (ok false, nil error).
func (a *X509) AuthenticateRequest(r *http.Request) (*User, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	leaf := r.TLS.PeerCertificates[0]
	opts := x509.VerifyOptions{
		Roots:         a.roots,
		Intermediates: x509.NewCertPool(),
		CurrentTime:   a.clock.Now(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	for _, c := range r.TLS.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := leaf.Verify(opts); err != nil {
		return nil, false, fmt.Errorf("verifying certificate %s failed: %w", certificateID(leaf), err)
	}
	if leaf.Subject.CommonName == "" {
		return nil, false, fmt.Errorf("certificate %s has no common name: it names no user", certificateID(leaf))
	}
	return &User{
		Name:   leaf.Subject.CommonName,
		Groups: append([]string(nil), leaf.Subject.Organization...),
	}, true, nil
}

// certificateID names a certificate in errors and logs.
func certificateID(c *x509.Certificate) string {
	return fmt.Sprintf("SN=%s, CN=%q, issuer=%q", c.SerialNumber, c.Subject.CommonName, c.Issuer.String())
}
