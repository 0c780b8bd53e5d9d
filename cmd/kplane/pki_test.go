package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

var testNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func testPKI(t *testing.T, cfg pkiConfig) *pki {
	t.Helper()
	if cfg.now.IsZero() {
		cfg.now = testNow
	}
	p, err := loadOrCreatePKI(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func leafOf(t *testing.T, c tls.Certificate) *x509.Certificate {
	t.Helper()
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf
}

func parsePEM(t *testing.T, data []byte) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(data)
	if b == nil {
		t.Fatal("not PEM")
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPKIIsReusedAndReissued(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	hosts := []string{"localhost", "127.0.0.1"}
	first := testPKI(t, pkiConfig{dir: dir, hosts: hosts})
	again := testPKI(t, pkiConfig{dir: dir, hosts: hosts, now: testNow.Add(time.Hour)})
	if !bytes.Equal(first.caPEM, again.caPEM) || !bytes.Equal(first.servingCert().Certificate[0], again.servingCert().Certificate[0]) ||
		!bytes.Equal(first.admin.creds().certPEM, again.admin.creds().certPEM) || !bytes.Equal(first.node.creds().certPEM, again.node.creds().certPEM) {
		t.Fatal("restart replaced the CA or a certificate")
	}
	// A new address gets a new serving certificate from the same CA.
	moved := testPKI(t, pkiConfig{dir: dir, hosts: []string{"localhost", "10.1.2.3"}, now: testNow.Add(time.Hour)})
	if !bytes.Equal(first.caPEM, moved.caPEM) || bytes.Equal(first.servingCert().Certificate[0], moved.servingCert().Certificate[0]) {
		t.Fatal("new host: CA changed or serving certificate kept")
	}
	roots := x509.NewCertPool()
	roots.AddCert(moved.ca)
	if _, err := leafOf(t, *moved.servingCert()).Verify(x509.VerifyOptions{DNSName: "10.1.2.3", Roots: roots, CurrentTime: testNow.Add(time.Hour)}); err != nil {
		t.Fatalf("serving certificate does not verify: %v", err)
	}
}

func TestPKIRenewsInLastThirdOfLifetime(t *testing.T) {
	dir := t.TempDir()
	first := testPKI(t, pkiConfig{dir: dir, hosts: []string{"localhost"}})
	tests := []struct {
		name    string
		at      time.Time
		renewed bool
	}{
		{"two thirds of the lifetime left: kept", testNow.Add(certValidity / 3), false},
		{"just inside the last third: renewed", testNow.Add(2*certValidity/3 + time.Hour), true},
		{"expired: renewed", testNow.Add(certValidity + time.Hour), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := t.TempDir()
			copyDir(t, dir, d)
			p := testPKI(t, pkiConfig{dir: d, hosts: []string{"localhost"}, now: tt.at})
			gotRenewed := !bytes.Equal(p.servingCert().Certificate[0], first.servingCert().Certificate[0])
			if gotRenewed != tt.renewed {
				t.Errorf("serving renewed %v, want %v", gotRenewed, tt.renewed)
			}
			if got := !bytes.Equal(p.controllerManager.creds().certPEM, first.controllerManager.creds().certPEM); got != tt.renewed {
				t.Errorf("client renewed %v, want %v", got, tt.renewed)
			}
			if !bytes.Equal(p.caPEM, first.caPEM) {
				t.Error("CA replaced")
			}
		})
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPKIIdentitiesAndKeyModes(t *testing.T) {
	dir := t.TempDir()
	p := testPKI(t, pkiConfig{dir: dir, hosts: servingHosts("10.0.0.5", "192.168.1.9", []string{"kplane.example.com", "10.9.9.9"})})
	srv := leafOf(t, *p.servingCert())
	host, _ := os.Hostname()
	for _, h := range []string{"localhost", "127.0.0.1", "::1", host, "10.0.0.5", "192.168.1.9", "kplane.example.com", "10.9.9.9"} {
		if err := srv.VerifyHostname(h); err != nil {
			t.Errorf("serving certificate lacks SAN %s: %v", h, err)
		}
	}
	if srv.PublicKeyAlgorithm != x509.ECDSA {
		t.Errorf("serving key %v, want ECDSA", srv.PublicKeyAlgorithm)
	}
	for _, c := range []struct {
		name   string
		cred   *identity
		cn     string
		groups []string
	}{
		{"admin", p.admin, "kplane-admin", []string{"system:masters"}},
		{"controller manager", p.controllerManager, "system:kube-controller-manager", nil},
		{"node", p.node, "system:node:kplane-nodesim", []string{"system:nodes"}},
	} {
		cert := parsePEM(t, c.cred.creds().certPEM)
		if cert.Subject.CommonName != c.cn || !slices.Equal(cert.Subject.Organization, c.groups) {
			t.Errorf("%s: subject %v, want CN %s O %v", c.name, cert.Subject, c.cn, c.groups)
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: p.clientCAs, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, CurrentTime: testNow}); err != nil {
			t.Errorf("%s: not verified by the client CAs: %v", c.name, err)
		}
	}
	entries, _ := os.ReadDir(dir)
	keys := 0
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".key") {
			continue
		}
		keys++
		fi, err := os.Stat(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", e.Name(), fi.Mode().Perm())
		}
	}
	if keys != 5 {
		t.Errorf("%d keys, want ca, server, admin, controller-manager and node", keys)
	}
	// A key file made readable by others is tightened on the next start.
	if err := os.Chmod(filepath.Join(dir, "admin.key"), 0o644); err != nil {
		t.Fatal(err)
	}
	testPKI(t, pkiConfig{dir: dir, hosts: []string{"localhost"}})
	if fi, _ := os.Stat(filepath.Join(dir, "admin.key")); fi.Mode().Perm() != 0o600 {
		t.Errorf("admin.key left %v", fi.Mode().Perm())
	}
}

func TestPKIReplacementFiles(t *testing.T) {
	// Another CA and a serving certificate from it, as an operator brings.
	other := testPKI(t, pkiConfig{dir: t.TempDir(), hosts: []string{"api.example.com"}})
	otherDir := t.TempDir()
	certFile, keyFile, caFile := filepath.Join(otherDir, "tls.crt"), filepath.Join(otherDir, "tls.key"), filepath.Join(otherDir, "clients.crt")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: other.servingCert().Certificate[0]}), 0o644); err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(other.servingCert().PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(caFile, other.caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := testPKI(t, pkiConfig{dir: dir, hosts: []string{"localhost"}, certFile: certFile, keyFile: keyFile, clientCAFile: caFile})
	if !bytes.Equal(p.servingCert().Certificate[0], other.servingCert().Certificate[0]) {
		t.Error("--tls-cert-file not served")
	}
	if p.caPEM != nil {
		t.Error("kubeconfigs would trust the generated CA for a certificate it did not sign")
	}
	if _, err := os.Stat(filepath.Join(dir, "server.crt")); err == nil {
		t.Error("a serving certificate was generated beside --tls-cert-file")
	}
	// The given client CA verifies its clients; the generated CA's are refused.
	if _, err := parsePEM(t, other.admin.creds().certPEM).Verify(x509.VerifyOptions{Roots: p.clientCAs, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, CurrentTime: testNow}); err != nil {
		t.Errorf("--client-ca-file client refused: %v", err)
	}
	if _, err := parsePEM(t, p.admin.creds().certPEM).Verify(x509.VerifyOptions{Roots: p.clientCAs, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, CurrentTime: testNow}); err == nil {
		t.Error("generated client certificate accepted although --client-ca-file replaced the CA")
	}
	if _, err := loadOrCreatePKI(pkiConfig{dir: dir, certFile: certFile, now: testNow}); err == nil {
		t.Error("--tls-cert-file without --tls-private-key-file accepted")
	}
	if _, err := loadOrCreatePKI(pkiConfig{dir: dir, clientCAFile: keyFile, now: testNow}); err == nil {
		t.Error("a --client-ca-file holding no certificate accepted")
	}
}

func TestKubeconfig(t *testing.T) {
	plain := kubeconfig("http://127.0.0.1:6443", nil, nil)
	for _, want := range []string{"server: http://127.0.0.1:6443\n", "user: {}\n", "current-context: kplane\n"} {
		if !strings.Contains(plain, want) {
			t.Errorf("plain kubeconfig lacks %q:\n%s", want, plain)
		}
	}
	p := testPKI(t, pkiConfig{dir: t.TempDir(), hosts: []string{"127.0.0.1"}})
	secure := kubeconfig("https://127.0.0.1:6443", p.caPEM, p.admin.creds())
	for _, want := range []string{"certificate-authority-data: ", "client-certificate-data: ", "client-key-data: "} {
		if !strings.Contains(secure, want) {
			t.Errorf("TLS kubeconfig lacks %q:\n%s", want, secure)
		}
	}
}

// servedCert returns the leaf a new TLS connection to ln is served.
func servedCert(t *testing.T, addr string) []byte {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the test compares the certificate itself
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].Raw
}

// tlsListener serves p's TLS configuration on loopback, completing each
// handshake and closing the connection.
func tlsListener(t *testing.T, p *pki) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", p.tlsConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			_ = c.Close()
		}
	}()
	return ln.Addr().String()
}

func TestPKIRenewsWhileServing(t *testing.T) {
	dir := t.TempDir()
	p := testPKI(t, pkiConfig{dir: dir, hosts: []string{"localhost"}})
	addr := tlsListener(t, p)
	before := servedCert(t, addr)
	oldClient := p.controllerManager.creds()

	if changed, err := p.renew(testNow.Add(certValidity / 2)); err != nil || len(changed) != 0 {
		t.Fatalf("renew at half the lifetime changed %v (err %v), want nothing", changed, err)
	}
	at := testNow.Add(2*certValidity/3 + time.Hour)
	changed, err := p.renew(at)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"serving certificate", "admin client certificate", "controller-manager client certificate", "node client certificate"}
	if !slices.Equal(changed, want) {
		t.Fatalf("renewed %v, want %v", changed, want)
	}
	after := servedCert(t, addr)
	if bytes.Equal(before, after) {
		t.Fatal("the listener still serves the old certificate")
	}
	served, err := x509.ParseCertificate(after)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(p.ca)
	if _, err := served.Verify(x509.VerifyOptions{DNSName: "localhost", Roots: roots, CurrentTime: at.Add(certValidity / 2)}); err != nil {
		t.Errorf("renewed serving certificate does not verify half a lifetime later: %v", err)
	}
	got, err := p.controllerManager.clientCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(got.Certificate[0], oldClient.pair.Certificate[0]) {
		t.Error("the controller manager's clients would still present the old certificate")
	}
	// What was renewed is on disk: a restart at the same time keeps it.
	again := testPKI(t, pkiConfig{dir: dir, hosts: []string{"localhost"}, now: at})
	if !bytes.Equal(again.servingCert().Certificate[0], after) || !bytes.Equal(again.node.creds().certPEM, p.node.creds().certPEM) {
		t.Error("a restart replaced certificates renewed while running")
	}
	if changed, err := p.renew(at); err != nil || len(changed) != 0 {
		t.Errorf("a second renew changed %v (err %v)", changed, err)
	}
}

func TestPKIReloadsGivenServingFiles(t *testing.T) {
	writePEMPair := func(t *testing.T, from *pki, certFile, keyFile string) {
		t.Helper()
		c := from.servingCert()
		keyDER, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]}), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	one := testPKI(t, pkiConfig{dir: t.TempDir(), hosts: []string{"api.example.com"}})
	two := testPKI(t, pkiConfig{dir: t.TempDir(), hosts: []string{"api.example.com"}})
	files := t.TempDir()
	certFile, keyFile := filepath.Join(files, "tls.crt"), filepath.Join(files, "tls.key")
	writePEMPair(t, one, certFile, keyFile)
	p := testPKI(t, pkiConfig{dir: t.TempDir(), certFile: certFile, keyFile: keyFile})
	addr := tlsListener(t, p)
	if !bytes.Equal(servedCert(t, addr), one.servingCert().Certificate[0]) {
		t.Fatal("--tls-cert-file not served")
	}
	if changed, err := p.renew(testNow); err != nil || len(changed) != 0 {
		t.Fatalf("unchanged files: renewed %v (err %v)", changed, err)
	}

	writePEMPair(t, two, certFile, keyFile)
	if changed, err := p.renew(testNow); err != nil || len(changed) != 1 {
		t.Fatalf("replaced files: renewed %v (err %v), want the serving certificate", changed, err)
	}
	if !bytes.Equal(servedCert(t, addr), two.servingCert().Certificate[0]) {
		t.Fatal("the replaced --tls-cert-file is not served")
	}

	// A half-written replacement (the key of another certificate) is
	// refused and the current certificate stays.
	writePEMPair(t, one, certFile, filepath.Join(files, "unused.key"))
	if _, err := p.renew(testNow); err == nil {
		t.Fatal("a certificate with the wrong key was accepted")
	}
	if !bytes.Equal(servedCert(t, addr), two.servingCert().Certificate[0]) {
		t.Fatal("a refused replacement changed the served certificate")
	}
}

func TestPKIReissuesAPairWhoseKeyDoesNotMatch(t *testing.T) {
	dir := t.TempDir()
	first := testPKI(t, pkiConfig{dir: dir, hosts: []string{"localhost"}})
	// A crash between writing a new key and its certificate leaves the
	// old certificate beside a new key.
	other := testPKI(t, pkiConfig{dir: t.TempDir(), hosts: []string{"localhost"}})
	key, err := os.ReadFile(filepath.Join(other.cfg.dir, "admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "admin.key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	p := testPKI(t, pkiConfig{dir: dir, hosts: []string{"localhost"}})
	if bytes.Equal(p.admin.creds().certPEM, first.admin.creds().certPEM) {
		t.Fatal("a certificate beside a key that is not its own was kept")
	}
	if _, err := tls.X509KeyPair(p.admin.creds().certPEM, p.admin.creds().keyPEM); err != nil {
		t.Fatalf("reissued pair does not match: %v", err)
	}
}

func TestKeepRenewed(t *testing.T) {
	p := testPKI(t, pkiConfig{dir: t.TempDir(), hosts: []string{"localhost"}})
	clk := clocktesting.NewFakeClock(testNow.Add(2*certValidity/3 + time.Hour))
	ctx, cancel := context.WithCancel(context.Background())
	renewed := make(chan []string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.keepRenewed(ctx, clk, slog.New(slog.DiscardHandler), func(what []string) { renewed <- what })
	}()
	defer func() { cancel(); <-done }()
	for !clk.HasWaiters() {
		runtime.Gosched()
	}
	select {
	case what := <-renewed:
		t.Fatalf("renewed %v before the first tick", what)
	default:
	}
	clk.Step(renewInterval)
	if what := <-renewed; len(what) != 4 {
		t.Errorf("renewed %v, want the serving and three client certificates", what)
	}
}
