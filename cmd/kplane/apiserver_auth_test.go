package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kplane/kplane/pkg/apiserver"
)

// frontProxyCA is a front proxy's CA, made as kplane makes its own, kept
// in a PEM file for --requestheader-client-ca-file.
type frontProxyCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	dir  string
	file string
}

func newFrontProxyCA(t *testing.T) *frontProxyCA {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "front-proxy-ca.crt")
	cert, key, _, err := createCA(file, filepath.Join(dir, "front-proxy-ca.key"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return &frontProxyCA{cert: cert, key: key, dir: dir, file: file}
}

// clientCert is a client certificate of the CA for cn.
func (ca *frontProxyCA) clientCert(t *testing.T, cn string) tls.Certificate {
	t.Helper()
	certPath, keyPath := filepath.Join(ca.dir, cn+".crt"), filepath.Join(ca.dir, cn+".key")
	if err := createLeaf(certPath, keyPath, ca.cert, ca.key, cn, nil, nil, x509.ExtKeyUsageClientAuth, time.Now()); err != nil {
		t.Fatal(err)
	}
	c, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// startAPIServer runs `kplane apiserver` with args (in-memory storage, a
// free port, a fresh data directory) until the test ends, and returns its
// URL and data directory.
func startAPIServer(t *testing.T, args ...string) (serverURL, dataDir string) {
	t.Helper()
	dataDir = t.TempDir()
	cmd := newAPIServerCommand()
	cmd.SetArgs(append([]string{"--storage=memory", "--port=0", "--data-dir", dataDir, "--log-level=error"}, args...))
	out, w := io.Pipe()
	cmd.SetOut(w)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		err := cmd.ExecuteContext(ctx)
		_ = w.CloseWithError(io.EOF)
		done <- err
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("kplane apiserver: %v", err)
		}
	})
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if u, ok := strings.CutPrefix(lines.Text(), "kplane apiserver serving on "); ok {
			go func() { _, _ = io.Copy(io.Discard, out) }()
			return u, dataDir
		}
	}
	cancel()
	t.Fatalf("kplane apiserver did not start: %v", <-done)
	return "", ""
}

// TestFrontProxyAuthentication starts a server with a request-header CA
// and asks it who the senders of a SelfSubjectReview are.
func TestFrontProxyAuthentication(t *testing.T) {
	ca := newFrontProxyCA(t)
	serverURL, dataDir := startAPIServer(t,
		"--requestheader-client-ca-file", ca.file,
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-uid-headers=X-Remote-Uid",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-")
	pkiDir := filepath.Join(dataDir, "pki")
	roots := x509.NewCertPool()
	caPEM, err := os.ReadFile(filepath.Join(pkiDir, "ca.crt"))
	if err != nil || !roots.AppendCertsFromPEM(caPEM) {
		t.Fatalf("server CA: %v", err)
	}
	admin, err := tls.LoadX509KeyPair(filepath.Join(pkiDir, "admin.crt"), filepath.Join(pkiDir, "admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	proxyHeaders := http.Header{
		"X-Remote-User":                     {"alice"},
		"X-Remote-Uid":                      {"uid-1"},
		"X-Remote-Group":                    {"dev", "ops"},
		"X-Remote-Extra-Acme.com%2Fproject": {"a"},
	}
	for _, tc := range []struct {
		name       string
		cert       *tls.Certificate
		wantStatus int
		want       authenticationv1.UserInfo
	}{
		{name: "proxy certificate: the headers' user", cert: new(ca.clientCert(t, "front-proxy-client")), wantStatus: http.StatusCreated,
			want: authenticationv1.UserInfo{Username: "alice", UID: "uid-1", Groups: []string{"dev", "ops", "system:authenticated"},
				Extra: map[string]authenticationv1.ExtraValue{"acme.com/project": {"a"}}}},
		{name: "client certificate: its own user, the headers ignored", cert: &admin, wantStatus: http.StatusCreated,
			want: authenticationv1.UserInfo{Username: adminUser, Groups: []string{adminGroup, "system:authenticated"}}},
		{name: "proxy certificate with a name not allowed: 401", cert: new(ca.clientCert(t, "mallory")), wantStatus: http.StatusUnauthorized},
		{name: "no certificate: 401", wantStatus: http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tlsConfig := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
			if tc.cert != nil {
				tlsConfig.Certificates = []tls.Certificate{*tc.cert}
			}
			c := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}, Timeout: 30 * time.Second}
			defer c.CloseIdleConnections()
			req, err := http.NewRequest(http.MethodPost, serverURL+"/apis/authentication.k8s.io/v1/selfsubjectreviews",
				strings.NewReader(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Header = proxyHeaders.Clone()
			req.Header.Set("Content-Type", "application/json")
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.wantStatus, body)
			}
			if tc.wantStatus != http.StatusCreated {
				return
			}
			var review authenticationv1.SelfSubjectReview
			if err := json.Unmarshal(body, &review); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			if diff := cmp.Diff(tc.want, review.Status.UserInfo); diff != "" {
				t.Errorf("user (-want +got):\n%s", diff)
			}
		})
	}
	// What extension API servers read to trust the front proxy.
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{admin}, MinVersion: tls.VersionTLS12}}, Timeout: 30 * time.Second}
	defer c.CloseIdleConnections()
	resp, err := c.Get(serverURL + "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var cm corev1.ConfigMap
	if err := json.NewDecoder(resp.Body).Decode(&cm); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("extension-apiserver-authentication: %d %v", resp.StatusCode, err)
	}
	proxyCAPEM, err := os.ReadFile(ca.file)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{
		"client-ca-file":                     string(caPEM),
		"requestheader-client-ca-file":       string(proxyCAPEM),
		"requestheader-allowed-names":        `["front-proxy-client"]`,
		"requestheader-username-headers":     `["X-Remote-User"]`,
		"requestheader-uid-headers":          `["X-Remote-Uid"]`,
		"requestheader-group-headers":        `["X-Remote-Group"]`,
		"requestheader-extra-headers-prefix": `["X-Remote-Extra-"]`,
	}, cm.Data); diff != "" {
		t.Errorf("extension-apiserver-authentication (-want +got):\n%s", diff)
	}
}

func TestRequestHeaderFlags(t *testing.T) {
	// As kube-apiserver's, on both commands and without defaults.
	for _, c := range []*cobra.Command{newAPIServerCommand(), newUpCommand()} {
		for _, name := range []string{"requestheader-client-ca-file", "requestheader-allowed-names", "requestheader-username-headers",
			"requestheader-uid-headers", "requestheader-group-headers", "requestheader-extra-headers-prefix"} {
			if f := c.Flags().Lookup(name); f == nil || (f.DefValue != "" && f.DefValue != "[]") {
				t.Errorf("%s --%s: %v, want a flag without default", c.Name(), name, f)
			}
		}
	}
	ca := newFrontProxyCA(t)
	creds := testPKI(t, pkiConfig{dir: t.TempDir(), hosts: []string{"localhost"}, now: time.Now()})
	log := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		name  string
		o     requestHeaderOptions
		creds *pki
		want  string
	}{
		{"client CA without username headers", requestHeaderOptions{clientCAFile: ca.file}, creds, "needs --requestheader-username-headers"},
		{"plain HTTP", requestHeaderOptions{clientCAFile: ca.file, usernameHeaders: []string{"X-Remote-User"}}, nil, "needs HTTPS"},
		{"missing CA file", requestHeaderOptions{clientCAFile: filepath.Join(t.TempDir(), "none"), usernameHeaders: []string{"X-Remote-User"}}, creds, "no such file"},
		{"blank header", requestHeaderOptions{clientCAFile: ca.file, usernameHeaders: []string{"X-Remote-User"}, groupHeaders: []string{""}}, creds, "empty group header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := tc.o.authenticator(tc.creds, log); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
	// Only the listener asks for the front proxy's CA: X509 keeps the
	// client CA alone.
	o := authOptions{authorizationMode: apiserver.AuthorizationModeRBAC, saIssuers: []string{defaultServiceAccountIssuer},
		requestHeader: requestHeaderOptions{clientCAFile: ca.file, usernameHeaders: []string{"X-Remote-User"}}}
	cfg := apiserver.Config{TLS: creds.tlsConfig()}
	if err := o.apply(&cfg, t.TempDir(), creds, log); err != nil {
		t.Fatal(err)
	}
	proxy, err := x509.ParseCertificate(ca.clientCert(t, "front-proxy-client").Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	verify := func(pool *x509.CertPool) error {
		_, err := proxy.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		return err
	}
	if err := verify(cfg.TLS.ClientCAs); err != nil {
		t.Errorf("the listener does not accept the front proxy's certificate: %v", err)
	}
	if err := verify(creds.clientCAs); err == nil {
		t.Error("the client CAs X509 verifies against took in the front proxy's CA")
	}
}
