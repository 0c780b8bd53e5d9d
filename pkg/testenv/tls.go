package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// certs are the TLS material of one environment: a self-signed CA, a
// serving certificate for the loopback addresses and a client certificate,
// both signed by the CA. Nothing is shared between environments.
type certs struct {
	caPEM []byte
	pool  *x509.CertPool
	// server is the serving certificate with its key, also in PEM.
	server                      tls.Certificate
	serverCertPEM, serverKeyPEM []byte
	// clientCertPEM and clientKeyPEM identify an administrator.
	clientCertPEM, clientKeyPEM []byte
}

// certValidity is how long the generated certificates are valid; far
// longer than any test, short enough to be obviously throwaway.
const certValidity = 24 * time.Hour

// newCerts makes a CA and the certificates it signs. ECDSA P-256 keys are
// used because generating them takes microseconds, where RSA takes
// milliseconds.
func newCerts(now time.Time) (*certs, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("testenv: CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kplane-testenv-ca"},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("testenv: CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("testenv: CA certificate: %w", err)
	}
	c := &certs{caPEM: pemBlock("CERTIFICATE", caDER), pool: x509.NewCertPool()}
	c.pool.AddCert(ca)

	serverTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kplane-testenv-apiserver"},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	c.serverCertPEM, c.serverKeyPEM, err = signLeaf(serverTmpl, ca, caKey)
	if err != nil {
		return nil, fmt.Errorf("testenv: serving certificate: %w", err)
	}
	if c.server, err = tls.X509KeyPair(c.serverCertPEM, c.serverKeyPEM); err != nil {
		return nil, fmt.Errorf("testenv: serving certificate: %w", err)
	}

	clientTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(3),
		// The identity kube-apiserver would map to a cluster administrator.
		Subject:     pkix.Name{CommonName: "kplane-testenv-admin", Organization: []string{"system:masters"}},
		NotBefore:   now.Add(-time.Minute),
		NotAfter:    now.Add(certValidity),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if c.clientCertPEM, c.clientKeyPEM, err = signLeaf(clientTmpl, ca, caKey); err != nil {
		return nil, fmt.Errorf("testenv: client certificate: %w", err)
	}
	return c, nil
}

// signLeaf makes a key for tmpl and a certificate signed by ca, both PEM.
func signLeaf(tmpl, ca *x509.Certificate, caKey *ecdsa.PrivateKey) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pemBlock("CERTIFICATE", der), pemBlock("EC PRIVATE KEY", keyDER), nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// serverTLS is the listener's configuration: the serving certificate, and
// client certificates verified against the CA when a client sends one.
func (c *certs) serverTLS() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{c.server},
		ClientAuth:   tls.VerifyClientCertIfGiven,
		ClientCAs:    c.pool,
		// HTTP/1.1 only: Server.Run serves the listener with net/http, which
		// negotiates HTTP/2 only for its own TLS listeners.
		NextProtos: []string{"http/1.1"},
	}
}
