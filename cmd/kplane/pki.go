package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is a self-signed certificate authority and a serving certificate it
// signed, kept in a directory so that restarts keep the same CA (and the
// kubeconfigs that trust it keep working).
type pki struct {
	caPEM []byte
	ca    *x509.Certificate
	cert  tls.Certificate
	// clientCertPEM and clientKeyPEM are an admin client certificate for
	// the kubeconfig.
	clientCertPEM, clientKeyPEM []byte
}

// certValidity is how long generated certificates are valid.
const certValidity = 365 * 24 * time.Hour

// loadOrCreatePKI reads ca.crt, ca.key, server.crt and server.key from dir,
// creating the CA and a serving certificate for hosts when missing. A
// serving certificate that lacks one of hosts is reissued from the CA.
func loadOrCreatePKI(dir string, hosts []string, now time.Time) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	caCertPath, caKeyPath := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	caCert, caKey, caPEM, err := loadPair(caCertPath, caKeyPath)
	if errors.Is(err, os.ErrNotExist) {
		caCert, caKey, caPEM, err = createCA(caCertPath, caKeyPath, now)
	}
	if err != nil {
		return nil, fmt.Errorf("pki: certificate authority: %w", err)
	}
	srvCertPath, srvKeyPath := filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	srvCert, _, _, err := loadPair(srvCertPath, srvKeyPath)
	if err != nil || !covers(srvCert, hosts, now) || srvCert.CheckSignatureFrom(caCert) != nil {
		if err := createLeaf(srvCertPath, srvKeyPath, caCert, caKey, "kplane-apiserver", nil, hosts, x509.ExtKeyUsageServerAuth, now); err != nil {
			return nil, fmt.Errorf("pki: serving certificate: %w", err)
		}
	}
	cert, err := tls.LoadX509KeyPair(srvCertPath, srvKeyPath)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	cliCertPath, cliKeyPath := filepath.Join(dir, "admin.crt"), filepath.Join(dir, "admin.key")
	cliCert, _, _, err := loadPair(cliCertPath, cliKeyPath)
	if err != nil || !covers(cliCert, nil, now) || cliCert.CheckSignatureFrom(caCert) != nil {
		if err := createLeaf(cliCertPath, cliKeyPath, caCert, caKey, "kplane-admin", []string{"system:masters"}, nil, x509.ExtKeyUsageClientAuth, now); err != nil {
			return nil, fmt.Errorf("pki: admin client certificate: %w", err)
		}
	}
	p := &pki{caPEM: caPEM, ca: caCert, cert: cert}
	if p.clientCertPEM, err = os.ReadFile(cliCertPath); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	if p.clientKeyPEM, err = os.ReadFile(cliKeyPath); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	return p, nil
}

// tlsConfig serves the certificate and verifies client certificates
// signed by the CA when clients present one.
func (p *pki) tlsConfig() *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(p.ca)
	return &tls.Config{
		Certificates: []tls.Certificate{p.cert},
		ClientCAs:    pool,
		ClientAuth:   tls.VerifyClientCertIfGiven,
		MinVersion:   tls.VersionTLS12,
	}
}

// covers reports whether cert is valid now and names every host.
func covers(cert *x509.Certificate, hosts []string, now time.Time) bool {
	if now.Before(cert.NotBefore) || now.After(cert.NotAfter.Add(-24*time.Hour)) {
		return false
	}
	for _, h := range hosts {
		if cert.VerifyHostname(h) != nil {
			return false
		}
	}
	return true
}

func loadPair(certPath, keyPath string) (*x509.Certificate, *ecdsa.PrivateKey, []byte, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, nil, nil, err
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, nil, nil, err
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil, nil, fmt.Errorf("%s or %s is not PEM", certPath, keyPath)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, nil, err
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, nil, err
	}
	return cert, key, certPEM, nil
}

func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
}

func createCA(certPath, keyPath string, now time.Time) (*x509.Certificate, *ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: "kplane-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, nil, err
	}
	certPEM, err := writePair(certPath, keyPath, der, key)
	if err != nil {
		return nil, nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, certPEM, err
}

// createLeaf issues a certificate for cn (with organizations orgs and
// subject alternative names hosts) signed by the CA.
func createLeaf(certPath, keyPath string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, cn string, orgs, hosts []string, usage x509.ExtKeyUsage, now time.Time) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	sn, err := serial()
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	_, err = writePair(certPath, keyPath, der, key)
	return err
}

func writePair(certPath, keyPath string, der []byte, key *ecdsa.PrivateKey) ([]byte, error) {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(certPath, certPEM, 0o644); err != nil {
		return nil, err
	}
	return certPEM, nil
}
