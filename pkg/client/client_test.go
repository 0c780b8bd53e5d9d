package client

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no host", Config{}, "Host is required"},
		{"bad scheme", Config{Host: "ftp://x"}, "scheme"},
		{"no host part", Config{Host: "https://"}, "no host"},
		{"query", Config{Host: "https://x?a=b"}, "query"},
		{"negative qps", Config{Host: "x", QPS: -1}, "negative"},
		{"negative timeout", Config{Host: "x", Timeout: -time.Second}, "negative"},
		{"bad CA", Config{Host: "x", CAData: []byte("nope")}, "no PEM certificate"},
		{"missing CA file", Config{Host: "x", CAFile: "/does/not/exist"}, "CAFile"},
		{"insecure with CA", Config{Host: "x", Insecure: true, CAData: []byte("x")}, "Insecure excludes"},
		{"cert without key", Config{Host: "x", CertData: []byte("x")}, "client certificate"},
		{"HTTPClient with TLS", Config{Host: "x", HTTPClient: http.DefaultClient, Insecure: true}, "excludes the TLS settings"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestHostForms(t *testing.T) {
	rec, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, testPod("a", "b")) })
	ts := httptest.NewServer(rec)
	t.Cleanup(ts.Close)
	c, err := New(Config{Host: ts.URL + "/prefix/"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewResource(c, Pods).Namespace("a").Get(context.Background(), "b", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := rec.last(t); got.Path != "/prefix/api/v1/namespaces/a/pods/b" || got.Header.Get("User-Agent") != "kplane-client" {
		t.Errorf("path %s, user agent %q", got.Path, got.Header.Get("User-Agent"))
	}
	if got := rec.last(t).Header.Get("Authorization"); got != "" {
		t.Errorf("Authorization sent without a token: %q", got)
	}
}

// testCert makes a self-signed certificate for 127.0.0.1 and returns it as
// PEM, with its key.
func testCert(t testing.TB, cn string) (certPEM, keyPEM []byte, cert tls.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:              []string{"kplane.test"},
		IPAddresses:           nil,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	cert, err = tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM, cert
}

// TestTLS checks server verification against a CA and client certificates.
func TestTLS(t *testing.T) {
	serverPEM, _, serverCert := testCert(t, "server")
	clientPEM, clientKey, _ := testCert(t, "client")
	clientPool := x509.NewCertPool()
	clientPool.AppendCertsFromPEM(clientPEM)

	var gotCN string
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) > 0 {
			gotCN = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		writeJSON(w, 200, testPod("a", "b"))
	}))
	ts.TLS = &tls.Config{Certificates: []tls.Certificate{serverCert}, ClientCAs: clientPool, ClientAuth: tls.VerifyClientCertIfGiven}
	ts.StartTLS()
	t.Cleanup(ts.Close)

	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, serverPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	clientPair, err := tls.X509KeyPair(clientPEM, clientKey)
	if err != nil {
		t.Fatal(err)
	}
	getClient := func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &clientPair, nil }
	get := func(cfg Config) error {
		cfg.Host = ts.URL
		c, err := New(cfg)
		if err != nil {
			return err
		}
		_, err = NewResource(c, Pods).Namespace("a").Get(context.Background(), "b", metav1.GetOptions{})
		return err
	}
	tests := []struct {
		name    string
		cfg     Config
		wantErr bool
		wantCN  string
	}{
		{"unknown CA", Config{}, true, ""},
		{"wrong server name", Config{CAData: serverPEM}, true, ""},
		{"CA data and server name", Config{CAData: serverPEM, TLSServerName: "kplane.test"}, false, ""},
		{"CA file", Config{CAFile: caFile, TLSServerName: "kplane.test"}, false, ""},
		{"insecure", Config{Insecure: true}, false, ""},
		{"client certificate", Config{CAData: serverPEM, TLSServerName: "kplane.test", CertData: clientPEM, KeyData: clientKey}, false, "client"},
		// A client for another identity derived from one with a
		// certificate must not present it: the server would take the
		// certificate's identity over any token.
		{"derived without credentials", Config{CAData: serverPEM, TLSServerName: "kplane.test", CertData: clientPEM, KeyData: clientKey, BearerToken: "t"}.WithoutCredentials(), false, ""},
		{"client certificate from a function", Config{CAData: serverPEM, TLSServerName: "kplane.test", GetClientCertificate: getClient}, false, "client"},
		{"derived from a function without credentials", Config{CAData: serverPEM, TLSServerName: "kplane.test", GetClientCertificate: getClient}.WithoutCredentials(), false, ""},
		{"function and data", Config{CAData: serverPEM, TLSServerName: "kplane.test", CertData: clientPEM, KeyData: clientKey, GetClientCertificate: getClient}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotCN = ""
			err := get(tt.cfg)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, want error %v", err, tt.wantErr)
			}
			if gotCN != tt.wantCN {
				t.Errorf("server saw client certificate %q, want %q", gotCN, tt.wantCN)
			}
		})
	}
}

// TestRateLimit checks the client-side limit: with QPS 1 and burst 1 the
// second request must wait about a second, which a context with a shorter
// deadline refuses at once (the limiter knows it cannot make it).
func TestRateLimit(t *testing.T) {
	rec := &recorder{reply: func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") == "true" {
			streamHandler(nil, false)(w, r)
			return
		}
		writeJSON(w, 200, testPod("a", "b"))
	}}
	ts := httptest.NewServer(rec)
	t.Cleanup(ts.Close)
	c, err := New(Config{Host: ts.URL, QPS: 0.001, Burst: 1})
	if err != nil {
		t.Fatal(err)
	}
	pods := NewResource(c, Pods).Namespace("a")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := pods.Get(ctx, "b", metav1.GetOptions{}); err != nil {
		t.Fatalf("first request: %v", err)
	}
	if _, err := pods.Get(ctx, "b", metav1.GetOptions{}); err == nil || !strings.Contains(err.Error(), "rate limiter") {
		t.Fatalf("second request = %v, want a rate limiter refusal", err)
	}
	// Watches are not limited.
	w, err := pods.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	w.Stop()

	unlimited, err := New(Config{Host: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if _, err := NewResource(unlimited, Pods).Namespace("a").Get(ctx, "b", metav1.GetOptions{}); err != nil {
			t.Fatalf("unlimited request %d: %v", i, err)
		}
	}
}

// TestTimeout checks that Config.Timeout ends a request the server does
// not answer, and does not end watches: the server sends a watch event
// only after three timeouts have passed, which a watch bound by the
// timeout could not receive.
func TestTimeout(t *testing.T) {
	const timeout = 50 * time.Millisecond
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") == "true" {
			streamHandler(nil, false)(w, r)
			select {
			case <-time.After(3 * timeout):
				_, _ = w.Write(eventLine(t, watch.Added, podWithRV("late", "1")))
			case <-r.Context().Done():
			}
			return
		}
		<-r.Context().Done()
	}))
	t.Cleanup(ts.Close)
	c, err := New(Config{Host: ts.URL, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewResource(c, Pods).Namespace("a").Get(context.Background(), "b", metav1.GetOptions{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error = %v, want a deadline exceeded", err)
	}
	w, err := NewResource(c, Pods).Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if ev, ok := <-w.ResultChan(); !ok || ev.Object.Name != "late" {
		t.Fatalf("watch event = %+v (open %v), want the late event", ev, ok)
	}
}

// TestHTTPClient checks that a caller's http.Client carries the requests,
// with the token and user agent still applied.
func TestHTTPClient(t *testing.T) {
	rec := &recorder{reply: func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, &corev1.Node{}) }}
	ts := httptest.NewServer(rec)
	t.Cleanup(ts.Close)
	used := false
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		used = true
		return http.DefaultTransport.RoundTrip(r)
	})}
	c, err := New(Config{Host: ts.URL, HTTPClient: hc, BearerToken: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewResource(c, Nodes).Get(context.Background(), "n", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if !used || rec.last(t).Header.Get("Authorization") != "Bearer t" {
		t.Errorf("HTTPClient used %v, Authorization %q", used, rec.last(t).Header.Get("Authorization"))
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestDo checks raw requests.
func TestDo(t *testing.T) {
	rec, c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/version" {
			writeJSON(w, 200, map[string]string{"gitVersion": "v1.37.2"})
			return
		}
		w.WriteHeader(http.StatusNotFound)
	})
	resp, err := c.Do(context.Background(), Request{Path: "/version", Header: http.Header{"Accept": {"application/json;as=Table;v=v1;g=meta.k8s.io"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(resp.Body), "v1.37.2") || resp.StatusCode != 200 {
		t.Errorf("response = %d %s", resp.StatusCode, resp.Body)
	}
	if got := rec.last(t).Header.Get("Accept"); got != "application/json;as=Table;v=v1;g=meta.k8s.io" {
		t.Errorf("Accept = %q", got)
	}
	if _, err := c.Do(context.Background(), Request{Path: "/nope"}); err == nil {
		t.Error("404 was not an error")
	}
}
