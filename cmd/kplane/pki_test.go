package main

import (
	"bytes"
	"crypto/x509"
	"path/filepath"
	"testing"
	"time"
)

func TestPKIIsReusedAndReissued(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	first, err := loadOrCreatePKI(dir, []string{"localhost", "127.0.0.1"}, now)
	if err != nil {
		t.Fatal(err)
	}
	again, err := loadOrCreatePKI(dir, []string{"localhost", "127.0.0.1"}, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.caPEM, again.caPEM) || !bytes.Equal(first.cert.Certificate[0], again.cert.Certificate[0]) {
		t.Fatal("restart replaced the CA or the serving certificate")
	}
	// A new address gets a new serving certificate from the same CA.
	moved, err := loadOrCreatePKI(dir, []string{"localhost", "10.1.2.3"}, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.caPEM, moved.caPEM) || bytes.Equal(first.cert.Certificate[0], moved.cert.Certificate[0]) {
		t.Fatal("new host: CA changed or serving certificate kept")
	}
	leaf, err := x509.ParseCertificate(moved.cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(moved.ca)
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "10.1.2.3", Roots: roots, CurrentTime: now.Add(time.Hour)}); err != nil {
		t.Fatalf("serving certificate does not verify: %v", err)
	}
	// An expiring certificate is reissued.
	late, err := loadOrCreatePKI(dir, []string{"localhost", "10.1.2.3"}, now.Add(certValidity))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(late.cert.Certificate[0], moved.cert.Certificate[0]) {
		t.Fatal("expiring certificate kept")
	}
}

func TestKubeconfig(t *testing.T) {
	plain := kubeconfig("http://127.0.0.1:6443", nil)
	for _, want := range []string{"server: http://127.0.0.1:6443\n", "user: {}\n", "current-context: kplane\n"} {
		if !bytes.Contains([]byte(plain), []byte(want)) {
			t.Errorf("plain kubeconfig lacks %q:\n%s", want, plain)
		}
	}
	p, err := loadOrCreatePKI(t.TempDir(), []string{"127.0.0.1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	secure := kubeconfig("https://127.0.0.1:6443", p)
	for _, want := range []string{"certificate-authority-data: ", "client-certificate-data: ", "client-key-data: "} {
		if !bytes.Contains([]byte(secure), []byte(want)) {
			t.Errorf("TLS kubeconfig lacks %q:\n%s", want, secure)
		}
	}
}
