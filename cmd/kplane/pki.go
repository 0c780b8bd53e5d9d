package main

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// The identities of kplane's own clients, named as Kubernetes names its
// components' users.
const (
	adminUser             = "kplane-admin"
	adminGroup            = "system:masters"
	controllerManagerUser = "system:kube-controller-manager"
	// nodeUser is the one identity all simulated nodes share: the node
	// simulator is one client acting for every node it runs, so it gets one
	// certificate, in the nodes' group.
	nodeUser   = "system:node:kplane-nodesim"
	nodesGroup = "system:nodes"
)

// pkiConfig says where the server's certificates come from.
type pkiConfig struct {
	// dir keeps the generated CA, serving and client certificates.
	dir string
	// hosts are the names and addresses the serving certificate is for.
	hosts []string
	// certFile and keyFile, when set, are the serving certificate and key
	// to use instead of a generated one (--tls-cert-file,
	// --tls-private-key-file).
	certFile, keyFile string
	// clientCAFile, when set, is the bundle that verifies client
	// certificates instead of the generated CA (--client-ca-file).
	clientCAFile string
	now          time.Time
}

// credentials are a PEM client certificate and its key, and the two
// parsed for a TLS handshake.
type credentials struct {
	certPEM, keyPEM []byte
	pair            tls.Certificate
}

// identity is a client certificate kplane issues one of its own
// components. renew replaces it; readers take the current one.
type identity struct {
	file, cn string
	orgs     []string
	current  atomic.Pointer[credentials]
}

// creds returns the identity's current certificate and key.
func (id *identity) creds() *credentials { return id.current.Load() }

// clientCertificate is a tls.Config.GetClientCertificate that presents the
// current certificate, so that a long-lived client picks up a renewed one
// on its next connection.
func (id *identity) clientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return &id.creds().pair, nil
}

// pki is what the server serves TLS with and what its clients present: a
// self-signed CA kept in a directory (so that restarts keep it and the
// kubeconfigs that trust it keep working), a serving certificate and
// client certificates for kplane's own components, each replaceable. The
// certificates are renewed while the server runs (renew, keepRenewed).
type pki struct {
	cfg pkiConfig
	// caPEM is the CA the kubeconfigs trust for the server: the generated
	// CA, or nil when the serving certificate is given (the system roots
	// must then trust it).
	caPEM []byte
	ca    *x509.Certificate
	caKey crypto.Signer
	// serving is the certificate the listener presents; servingLeaf is
	// its parsed leaf and servingFiles the contents of the given
	// certificate and key files it was loaded from (nil when generated).
	serving      atomic.Pointer[tls.Certificate]
	servingLeaf  *x509.Certificate
	servingFiles []byte
	// clientCAs verify client certificates; clientCAPEM is their bundle,
	// which the server publishes for extension API servers.
	clientCAs   *x509.CertPool
	clientCAPEM []byte
	// requestHeaderCAs are the CAs of front proxies' certificates
	// (--requestheader-client-ca-file), which the listener asks for too.
	requestHeaderCAs []*x509.Certificate
	// admin (kplane-admin in system:masters), controllerManager and node
	// are the client certificates the kubeconfigs present.
	admin, controllerManager, node *identity
	// mu serializes renew.
	mu sync.Mutex
}

// certValidity is how long generated leaf certificates are valid.
const certValidity = 365 * 24 * time.Hour

// loadOrCreatePKI reads the CA and certificates from cfg.dir, creating
// what is missing. A generated certificate that is invalid, not signed by
// the CA, not matching its key, in the last third of its lifetime or
// (serving) lacking one of cfg.hosts is reissued; the CA is kept. Keys are
// written 0600.
func loadOrCreatePKI(cfg pkiConfig) (*pki, error) {
	if err := os.MkdirAll(cfg.dir, 0o700); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	if (cfg.certFile == "") != (cfg.keyFile == "") {
		return nil, errors.New("pki: --tls-cert-file and --tls-private-key-file go together")
	}
	caCertPath, caKeyPath := filepath.Join(cfg.dir, "ca.crt"), filepath.Join(cfg.dir, "ca.key")
	caCert, caKey, caPEM, err := loadPair(caCertPath, caKeyPath)
	if errors.Is(err, os.ErrNotExist) {
		caCert, caKey, caPEM, err = createCA(caCertPath, caKeyPath, cfg.now)
	}
	if err != nil {
		return nil, fmt.Errorf("pki: certificate authority: %w", err)
	}
	p := &pki{
		cfg: cfg, caPEM: caPEM, ca: caCert, caKey: caKey,
		admin:             &identity{file: "admin", cn: adminUser, orgs: []string{adminGroup}},
		controllerManager: &identity{file: "controller-manager", cn: controllerManagerUser},
		node:              &identity{file: "node", cn: nodeUser, orgs: []string{nodesGroup}},
	}
	if cfg.certFile != "" {
		p.caPEM = nil
	}

	p.clientCAs = x509.NewCertPool()
	if cfg.clientCAFile != "" {
		data, err := os.ReadFile(cfg.clientCAFile)
		if err != nil {
			return nil, fmt.Errorf("pki: --client-ca-file: %w", err)
		}
		if !p.clientCAs.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("pki: --client-ca-file %s holds no PEM certificate", cfg.clientCAFile)
		}
		p.clientCAPEM = data
	} else {
		p.clientCAs.AddCert(caCert)
		p.clientCAPEM = caPEM
	}
	if _, err := p.renew(cfg.now); err != nil {
		return nil, err
	}
	return p, nil
}

// renew brings every certificate up to date at now, as loadOrCreatePKI
// does at start: a generated certificate in the last third of its
// lifetime is reissued (and written to the directory), a given serving
// certificate is loaded again when its files changed. It returns the
// names of what changed. On an error what is current stays in use.
func (p *pki) renew(now time.Time) (changed []string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cfg.certFile != "" {
		certPEM, err := os.ReadFile(p.cfg.certFile)
		if err != nil {
			return changed, fmt.Errorf("pki: --tls-cert-file: %w", err)
		}
		keyPEM, err := os.ReadFile(p.cfg.keyFile)
		if err != nil {
			return changed, fmt.Errorf("pki: --tls-private-key-file: %w", err)
		}
		if files := append(append(certPEM, 0), keyPEM...); !bytes.Equal(files, p.servingFiles) {
			pair, err := tls.X509KeyPair(certPEM, keyPEM)
			if err != nil {
				return changed, fmt.Errorf("pki: --tls-cert-file: %w", err)
			}
			if err := p.setServing(pair); err != nil {
				return changed, err
			}
			p.servingFiles = files
			changed = append(changed, "serving certificate "+p.cfg.certFile)
		}
	} else if p.servingLeaf == nil || !p.current(p.servingLeaf, now) || !covers(p.servingLeaf, p.cfg.hosts) {
		srvCertPath, srvKeyPath := filepath.Join(p.cfg.dir, "server.crt"), filepath.Join(p.cfg.dir, "server.key")
		if err := ensureLeaf(srvCertPath, srvKeyPath, p.ca, p.caKey, "kplane-apiserver", nil, p.cfg.hosts, x509.ExtKeyUsageServerAuth, now); err != nil {
			return changed, fmt.Errorf("pki: serving certificate: %w", err)
		}
		pair, err := tls.LoadX509KeyPair(srvCertPath, srvKeyPath)
		if err != nil {
			return changed, fmt.Errorf("pki: %w", err)
		}
		if err := p.setServing(pair); err != nil {
			return changed, err
		}
		changed = append(changed, "serving certificate")
	}

	for _, id := range []*identity{p.admin, p.controllerManager, p.node} {
		if c := id.creds(); c != nil && p.current(c.pair.Leaf, now) {
			continue
		}
		certPath, keyPath := filepath.Join(p.cfg.dir, id.file+".crt"), filepath.Join(p.cfg.dir, id.file+".key")
		if err := ensureLeaf(certPath, keyPath, p.ca, p.caKey, id.cn, id.orgs, nil, x509.ExtKeyUsageClientAuth, now); err != nil {
			return changed, fmt.Errorf("pki: %s client certificate: %w", id.file, err)
		}
		c := &credentials{}
		if c.certPEM, err = os.ReadFile(certPath); err != nil {
			return changed, fmt.Errorf("pki: %w", err)
		}
		if c.keyPEM, err = os.ReadFile(keyPath); err != nil {
			return changed, fmt.Errorf("pki: %w", err)
		}
		if c.pair, err = tls.X509KeyPair(c.certPEM, c.keyPEM); err != nil {
			return changed, fmt.Errorf("pki: %s client certificate: %w", id.file, err)
		}
		id.current.Store(c)
		changed = append(changed, id.file+" client certificate")
	}
	return changed, nil
}

// current reports whether a generated leaf can stay in use at now: fresh
// and signed by the CA.
func (p *pki) current(leaf *x509.Certificate, now time.Time) bool {
	return leaf != nil && fresh(leaf, now) && leaf.CheckSignatureFrom(p.ca) == nil
}

// setServing makes pair the certificate the listener presents.
func (p *pki) setServing(pair tls.Certificate) error {
	if pair.Leaf == nil {
		leaf, err := x509.ParseCertificate(pair.Certificate[0])
		if err != nil {
			return fmt.Errorf("pki: serving certificate: %w", err)
		}
		pair.Leaf = leaf
	}
	p.servingLeaf = pair.Leaf
	p.serving.Store(&pair)
	return nil
}

// servingCert returns the certificate the listener presents now.
func (p *pki) servingCert() *tls.Certificate { return p.serving.Load() }

// renewInterval is how often keepRenewed checks the certificates: often
// enough that a replaced --tls-cert-file is served within a minute, as
// kube-apiserver reloads its serving certificate files.
const renewInterval = time.Minute

// keepRenewed calls renew every renewInterval of clk until ctx ends, and
// changed with what changed. Failures are logged; the current
// certificates stay in use and the next tick tries again.
func (p *pki) keepRenewed(ctx context.Context, clk clock.WithTicker, logger *slog.Logger, changed func([]string)) {
	t := clk.NewTicker(renewInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		what, err := p.renew(clk.Now())
		if err != nil {
			logger.Warn("renewing certificates failed; the current ones stay in use", "err", err)
		}
		if len(what) > 0 {
			logger.Info("certificates renewed", "certificates", what)
			if changed != nil {
				changed(what)
			}
		}
	}
}

// tlsConfig serves the current serving certificate and asks for client
// certificates of the client and request-header CAs.
func (p *pki) tlsConfig() *tls.Config {
	return &tls.Config{
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return p.servingCert(), nil },
		ClientCAs:      p.listenerClientCAs(),
		ClientAuth:     tls.VerifyClientCertIfGiven,
		MinVersion:     tls.VersionTLS12,
	}
}

// listenerClientCAs are the CAs the listener names when it asks for a
// client certificate and verifies one against: the client CAs and the
// request-header CAs, so that clients and front proxies both send theirs.
// The authenticators verify again, each against its own CAs only.
func (p *pki) listenerClientCAs() *x509.CertPool {
	if len(p.requestHeaderCAs) == 0 {
		return p.clientCAs
	}
	pool := p.clientCAs.Clone()
	for _, c := range p.requestHeaderCAs {
		pool.AddCert(c)
	}
	return pool
}

// ensureLeaf keeps the certificate at certPath when it is fresh, signed
// by ca, and for cn, orgs and every host; otherwise it issues a new one.
func ensureLeaf(certPath, keyPath string, ca *x509.Certificate, caKey crypto.Signer, cn string, orgs, hosts []string, usage x509.ExtKeyUsage, now time.Time) error {
	cert, key, _, err := loadPair(certPath, keyPath)
	if err == nil && fresh(cert, now) && cert.CheckSignatureFrom(ca) == nil && cert.Subject.CommonName == cn &&
		slices.Equal(cert.Subject.Organization, orgs) && covers(cert, hosts) && key.PublicKey.Equal(cert.PublicKey) {
		// Tighten a key file someone loosened.
		return os.Chmod(keyPath, 0o600)
	}
	return createLeaf(certPath, keyPath, ca, caKey, cn, orgs, hosts, usage, now)
}

// fresh reports whether cert is valid at now and not in the last third of
// its lifetime, past which it is renewed at start.
func fresh(cert *x509.Certificate, now time.Time) bool {
	lifetime := cert.NotAfter.Sub(cert.NotBefore)
	return !now.Before(cert.NotBefore) && now.Before(cert.NotAfter.Add(-lifetime/3))
}

// covers reports whether cert names every host.
func covers(cert *x509.Certificate, hosts []string) bool {
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
func createLeaf(certPath, keyPath string, ca *x509.Certificate, caKey crypto.Signer, cn string, orgs, hosts []string, usage x509.ExtKeyUsage, now time.Time) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	sn, err := serial()
	if err != nil {
		return err
	}
	// A certificate must not outlive the CA that signed it.
	notAfter := now.Add(certValidity)
	if ca.NotAfter.Before(notAfter) {
		notAfter = ca.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     notAfter,
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

// writePair writes the key 0600 (replacing the file, so that an existing
// file's looser mode does not survive) and the certificate 0644.
func writePair(certPath, keyPath string, der []byte, key *ecdsa.PrivateKey) ([]byte, error) {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := writeFileAtomic(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, err
	}
	if err := writeFileAtomic(certPath, certPEM, 0o644); err != nil {
		return nil, err
	}
	return certPEM, nil
}

// writeFileAtomic writes data to a new file of mode perm beside path and
// renames it over path.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr, os.Chmod(tmp, perm)); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}
