package etcd

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kplane/kplane/pkg/storage"
)

// testPKI writes a CA, a server certificate for 127.0.0.1 (also valid for
// client auth) and a client certificate into dir.
func testPKI(t *testing.T, dir string) (server, client TLSFiles) {
	t.Helper()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	now := time.Now()
	caKey := newKey()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kplane test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	caFile := write("ca.pem", "CERTIFICATE", caDER)
	issue := func(name string, serial int64, usages []x509.ExtKeyUsage) TLSFiles {
		key := newKey()
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: usages,
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		return TLSFiles{
			CertFile: write(name+".pem", "CERTIFICATE", der),
			KeyFile:  write(name+"-key.pem", "EC PRIVATE KEY", keyDER),
			CAFile:   caFile,
		}
	}
	server = issue("server", 2, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth})
	client = issue("client", 3, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth})
	return server, client
}

func TestTLS(t *testing.T) {
	dir := t.TempDir()
	serverFiles, clientFiles := testPKI(t, dir)
	e, err := StartEmbedded(context.Background(), EmbeddedConfig{DataDir: filepath.Join(dir, "data"), ServerTLS: &serverFiles, UnsafeNoFsync: true})
	if err != nil {
		t.Fatalf("StartEmbedded with TLS: %v", err)
	}
	defer e.Close()
	if !strings.HasPrefix(e.ClientURL(), "https://127.0.0.1:") {
		t.Fatalf("client URL %s is not https on loopback", e.ClientURL())
	}
	// try creates a ConfigMap through a backend with tlsFiles (nil: plain
	// text) and returns the error.
	try := func(tlsFiles *TLSFiles, url string) error {
		cfg := Config{Endpoints: []string{url}, DialTimeout: 2 * time.Second}
		if tlsFiles != nil {
			tc, err := tlsFiles.ClientConfig()
			if err != nil {
				t.Fatal(err)
			}
			cfg.TLS = tc
		}
		b, err := New(cfg)
		if err != nil {
			return err
		}
		defer b.Close()
		s, err := b.Storage(cmConfig)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return s.Create(ctx, "/configmaps/ns/tls-"+filepath.Base(url), newTestCM("tls"), &corev1.ConfigMap{})
	}
	if err := try(&clientFiles, e.ClientURL()); err != nil {
		t.Fatalf("create with a client certificate: %v", err)
	}
	noCert := TLSFiles{CAFile: clientFiles.CAFile}
	if err := try(&noCert, e.ClientURL()); err == nil || storage.IsExists(err) {
		t.Errorf("create without a client certificate: %v, want a TLS failure", err)
	}
	if err := try(nil, "http://"+strings.TrimPrefix(e.ClientURL(), "https://")); err == nil || storage.IsExists(err) {
		t.Errorf("create over plain text: %v, want a failure", err)
	}
}

func TestTLSFilesErrors(t *testing.T) {
	dir := t.TempDir()
	_, client := testPKI(t, dir)
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		files TLSFiles
		want  string
	}{
		{"cert without key", TLSFiles{CertFile: client.CertFile}, "both a certificate and a key"},
		{"missing cert file", TLSFiles{CertFile: filepath.Join(dir, "nope.pem"), KeyFile: client.KeyFile}, "nope.pem"},
		{"missing CA file", TLSFiles{CAFile: filepath.Join(dir, "nope-ca.pem")}, "nope-ca.pem"},
		{"CA file without PEM", TLSFiles{CAFile: garbage}, "holds no PEM certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.files.ClientConfig()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ClientConfig: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}
