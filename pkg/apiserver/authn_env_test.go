package apiserver

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"

	"github.com/kplane/kplane/pkg/authentication"
	"github.com/kplane/kplane/pkg/storage/memory"
)

// authEnv is a server over loopback HTTPS that requests (and does not
// itself verify) client certificates, with a client CA to issue them.
type authEnv struct {
	t      testing.TB
	clock  *testclock.FakeClock
	server *Server
	http   *httptest.Server
	ca     *testCA
}

var authEnvStart = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// newAuthEnv starts an authEnv; the X509 authenticator over its CA is
// passed to configure, which sets the rest of the Config.
func newAuthEnv(t testing.TB, configure func(cfg *Config, x509 authentication.Authenticator)) *authEnv {
	t.Helper()
	return newAuthEnvTLS(t, tls.RequestClientCert, configure)
}

// newAuthEnvTLS is newAuthEnv with a listener asking for client
// certificates as clientAuth says (verifying them against the env's CA
// when it asks the listener to verify).
func newAuthEnvTLS(t testing.TB, clientAuth tls.ClientAuthType, configure func(cfg *Config, x509 authentication.Authenticator)) *authEnv {
	t.Helper()
	clk := testclock.NewFakeClock(authEnvStart)
	backend, err := memory.New(memory.Config{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ca := newTestCA(t, "kplane-client-ca", authEnvStart)
	x, err := authentication.NewX509(authentication.X509Config{ClientCA: ca.pool, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Backend: backend, Clock: clk, Admission: noServiceAccounts}
	if configure != nil {
		configure(&cfg, x)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(s.Handler())
	hs.TLS = &tls.Config{ClientAuth: clientAuth, ClientCAs: ca.pool}
	hs.StartTLS()
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		_ = backend.Close()
	})
	return &authEnv{t: t, clock: clk, server: s, http: hs, ca: ca}
}

// client returns an HTTPS client presenting certs (none: no client certificate).
func (e *authEnv) client(certs ...tls.Certificate) *http.Client {
	tr := e.http.Client().Transport.(*http.Transport).Clone()
	tr.TLSClientConfig.Certificates = certs
	e.t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// do sends a request with c; headers are name, value pairs (Add, so a
// name may repeat).
func (e *authEnv) do(c *http.Client, method, path string, body any, headers ...string) response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, e.http.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Content-Type" {
			req.Header.Set(headers[i], headers[i+1])
			continue
		}
		// Added, so that a header may be given several times
		// (Impersonate-Group).
		req.Header.Add(headers[i], headers[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return response{code: resp.StatusCode, header: resp.Header, body: data}
}

// testCA issues client certificates.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

var serial atomic.Int64

func newTestCA(t testing.TB, name string, now time.Time) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial.Add(1)), Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(3 * 365 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// issue returns a client certificate for cn in orgs valid from notBefore
// to notAfter.
func (ca *testCA) issue(t testing.TB, cn string, orgs []string, notBefore, notAfter time.Time) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial.Add(1)), Subject: pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore: notBefore, NotAfter: notAfter, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// user returns a certificate for cn valid around the env's start.
func (e *authEnv) user(cn string, orgs ...string) tls.Certificate {
	return e.ca.issue(e.t, cn, orgs, authEnvStart.Add(-time.Minute), authEnvStart.Add(24*time.Hour))
}
