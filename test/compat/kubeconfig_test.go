package compat

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kplane/kplane/pkg/client"
)

// loaded is what both loaders agree on: where to connect, how, and the
// default namespace.
type loaded struct {
	Host, ServerName, Token, Namespace string
	Insecure                           bool
	CA, Cert, Key                      string
}

func readIfSet(t testing.TB, data []byte, file string) string {
	t.Helper()
	if len(data) > 0 || file == "" {
		return string(data)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// viaClientcmd loads files as kubectl does, with $KUBECONFIG set to them.
func viaClientcmd(t testing.TB, files []string, context string) (loaded, error) {
	t.Helper()
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{Precedence: files},
		&clientcmd.ConfigOverrides{CurrentContext: context})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return loaded{}, err
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return loaded{}, err
	}
	// client-go's transport sends the trimmed content of the token file
	// when one is set, in preference to BearerToken.
	token := cfg.BearerToken
	if cfg.BearerTokenFile != "" {
		token = strings.TrimSpace(readIfSet(t, nil, cfg.BearerTokenFile))
	}
	return loaded{
		Host: cfg.Host, ServerName: cfg.ServerName, Token: token, Namespace: ns, Insecure: cfg.Insecure,
		CA:   readIfSet(t, cfg.CAData, cfg.CAFile),
		Cert: readIfSet(t, cfg.CertData, cfg.CertFile),
		Key:  readIfSet(t, cfg.KeyData, cfg.KeyFile),
	}, nil
}

func viaKplane(files []string, context string) (loaded, error) {
	k, err := client.LoadKubeconfig(client.KubeconfigOptions{
		Context: context,
		Getenv: func(key string) string {
			if key == "KUBECONFIG" {
				return strings.Join(files, string(os.PathListSeparator))
			}
			return ""
		},
	})
	if err != nil {
		return loaded{}, err
	}
	c := k.Config
	return loaded{Host: c.Host, ServerName: c.TLSServerName, Token: c.BearerToken, Namespace: k.Namespace,
		Insecure: c.Insecure, CA: string(c.CAData), Cert: string(c.CertData), Key: string(c.KeyData)}, nil
}

func selfSigned(t testing.TB) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "x"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// TestKubeconfigMatchesClientcmd checks that pkg/client reads and merges
// kubeconfig files exactly as client-go's clientcmd (kubectl) does.
func TestKubeconfigMatchesClientcmd(t *testing.T) {
	dir := t.TempDir()
	certPEM, keyPEM := selfSigned(t)
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	b64 := base64.StdEncoding.EncodeToString
	write("pki/ca.crt", string(certPEM))
	write("pki/client.crt", string(certPEM))
	write("pki/client.key", string(keyPEM))
	write("tok", "from-file\n")
	first := write("a/first", `apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: local
  cluster: {server: "https://127.0.0.1:6443", certificate-authority: ../pki/ca.crt}
- name: remote
  cluster: {server: "https://remote:443", insecure-skip-tls-verify: true}
users:
- name: admin
  user: {client-certificate: ../pki/client.crt, client-key: ../pki/client.key}
- name: bot
  user: {tokenFile: ../tok}
contexts:
- name: dev
  context: {cluster: local, user: admin, namespace: team-a}
- name: ops
  context: {cluster: remote, user: bot}
`)
	second := write("second", `apiVersion: v1
kind: Config
current-context: data
clusters:
- name: local
  cluster: {server: "https://shadowed:1"}
- name: data
  cluster: {server: "https://data:8443", certificate-authority-data: `+b64(certPEM)+`, tls-server-name: kplane.test}
users:
- name: tok
  user: {token: abc, client-certificate-data: `+b64(certPEM)+`, client-key-data: `+b64(keyPEM)+`}
- name: admin
  user: {token: shadowed}
contexts:
- name: dev
  context: {cluster: data, user: tok}
- name: data
  context: {cluster: data, user: tok, namespace: data-ns}
- name: anon
  context: {cluster: local}
`)
	missing := filepath.Join(dir, "missing")

	tests := []struct {
		name    string
		files   []string
		context string
		wantErr bool
	}{
		{"first file's current context", []string{first, second}, "", false},
		{"second file first", []string{second, first}, "", false},
		{"named context", []string{first, second}, "ops", false},
		{"context from the second file", []string{first, second}, "data", false},
		{"cluster shadowed by the first file", []string{first, second}, "anon", false},
		{"missing files skipped", []string{missing, second}, "dev", false},
		{"missing context", []string{first}, "nope", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, werr := viaClientcmd(t, tt.files, tt.context)
			got, gerr := viaKplane(tt.files, tt.context)
			if (werr != nil) != tt.wantErr || (gerr != nil) != tt.wantErr {
				t.Fatalf("errors: clientcmd %v, kplane %v; want error %v", werr, gerr, tt.wantErr)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("kplane differs from clientcmd (-clientcmd +kplane):\n%s", diff)
			}
		})
	}
}
