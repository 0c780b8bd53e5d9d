package etcd

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// TLSFiles names the PEM files of one side of a TLS connection to etcd.
type TLSFiles struct {
	// CertFile and KeyFile are this side's certificate and key. A client
	// needs them only when etcd checks client certificates; a server
	// always needs them.
	CertFile, KeyFile string
	// CAFile holds the certificates that verify the other side. For a
	// client, empty means the system roots; for a server, setting it makes
	// the server require client certificates signed by it.
	CAFile string
}

// ClientConfig returns the tls.Config a client uses to reach etcd with f.
// It fails with a message naming the file that cannot be used.
func (f TLSFiles) ClientConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if (f.CertFile == "") != (f.KeyFile == "") {
		return nil, errors.New("etcd tls: give both a certificate and a key file, or neither")
	}
	if f.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("etcd tls: load %s and %s: %w", f.CertFile, f.KeyFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if f.CAFile != "" {
		pem, err := os.ReadFile(f.CAFile)
		if err != nil {
			return nil, fmt.Errorf("etcd tls: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("etcd tls: %s holds no PEM certificate", f.CAFile)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}
