package client

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestLoadKubeconfig(t *testing.T) {
	dir := t.TempDir()
	caPEM, keyPEM, _ := testCert(t, "x")
	b64 := base64.StdEncoding.EncodeToString
	writeFile(t, dir, "certs/ca.crt", string(caPEM))
	writeFile(t, dir, "certs/client.crt", string(caPEM))
	writeFile(t, dir, "certs/client.key", string(keyPEM))
	writeFile(t, dir, "token", "file-token\n")

	first := writeFile(t, dir, "first.yaml", `apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority: certs/ca.crt
- name: remote
  cluster:
    server: https://remote:443
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    client-certificate: certs/client.crt
    client-key: certs/client.key
- name: bot
  user:
    tokenFile: token
contexts:
- name: dev
  context: {cluster: local, user: admin, namespace: team-a}
- name: ops
  context: {cluster: remote, user: bot}
`)
	second := writeFile(t, dir, "second.yaml", `current-context: ops
clusters:
- name: local
  cluster: {server: "https://ignored:1"}
- name: data
  cluster:
    server: http://data:8080
    certificate-authority-data: `+b64(caPEM)+`
    tls-server-name: kplane.test
users:
- name: tok
  user:
    token: abc
    client-certificate-data: `+b64(caPEM)+`
    client-key-data: `+b64(keyPEM)+`
contexts:
- name: dev
  context: {cluster: data, user: tok}
- name: data
  context: {cluster: data, user: tok}
- name: anon
  context: {cluster: data}
`)
	bad := writeFile(t, dir, "bad.yaml", "clusters: [1, 2")
	missing := filepath.Join(dir, "missing.yaml")
	home := t.TempDir()
	writeFile(t, home, ".kube/config", `current-context: home
clusters: [{name: c, cluster: {server: "https://home"}}]
contexts: [{name: home, context: {cluster: c}}]
`)
	list := func(files ...string) string { return strings.Join(files, string(os.PathListSeparator)) }

	tests := []struct {
		name    string
		opts    KubeconfigOptions
		want    *Kubeconfig
		wantErr string
	}{{
		name: "current context of the first file, relative files",
		opts: KubeconfigOptions{Getenv: env(map[string]string{"KUBECONFIG": list(first, second)})},
		want: &Kubeconfig{Context: "dev", Namespace: "team-a", Files: []string{first, second},
			Config: Config{Host: "https://127.0.0.1:6443", CAData: caPEM, CertData: caPEM, KeyData: keyPEM}},
	}, {
		name: "second file first: its current context and its dev win",
		opts: KubeconfigOptions{Getenv: env(map[string]string{"KUBECONFIG": list(second, first)})},
		want: &Kubeconfig{Context: "ops", Namespace: "default", Files: []string{second, first},
			Config: Config{Host: "https://remote:443", Insecure: true, BearerToken: "file-token"}},
	}, {
		name: "named context, data fields, missing files skipped",
		opts: KubeconfigOptions{Context: "data", Getenv: env(map[string]string{"KUBECONFIG": list(missing, first, "", second)})},
		want: &Kubeconfig{Context: "data", Namespace: "default", Files: []string{first, second},
			Config: Config{Host: "http://data:8080", CAData: caPEM, TLSServerName: "kplane.test", BearerToken: "abc", CertData: caPEM, KeyData: keyPEM}},
	}, {
		name: "context without user",
		opts: KubeconfigOptions{Path: second, Context: "anon"},
		want: &Kubeconfig{Context: "anon", Namespace: "default", Files: []string{second},
			Config: Config{Host: "http://data:8080", CAData: caPEM, TLSServerName: "kplane.test"}},
	}, {
		name: "explicit path beats $KUBECONFIG",
		opts: KubeconfigOptions{Path: first, Context: "ops", Getenv: env(map[string]string{"KUBECONFIG": second})},
		want: &Kubeconfig{Context: "ops", Namespace: "default", Files: []string{first},
			Config: Config{Host: "https://remote:443", Insecure: true, BearerToken: "file-token"}},
	}, {
		name: "home directory",
		opts: KubeconfigOptions{Getenv: env(nil), HomeDir: home},
		want: &Kubeconfig{Context: "home", Namespace: "default", Files: []string{filepath.Join(home, ".kube", "config")},
			Config: Config{Host: "https://home"}},
	}, {
		name:    "missing context",
		opts:    KubeconfigOptions{Path: first, Context: "nope"},
		wantErr: `context "nope" not found`,
	}, {
		name:    "missing explicit file",
		opts:    KubeconfigOptions{Path: missing},
		wantErr: "no such file",
	}, {
		name:    "missing home config",
		opts:    KubeconfigOptions{Getenv: env(nil), HomeDir: t.TempDir()},
		wantErr: "no such file",
	}, {
		name:    "no file of $KUBECONFIG exists",
		opts:    KubeconfigOptions{Getenv: env(map[string]string{"KUBECONFIG": missing})},
		wantErr: "none of the files",
	}, {
		name:    "malformed file",
		opts:    KubeconfigOptions{Path: bad},
		wantErr: "bad.yaml: parse",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LoadKubeconfig(tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("kubeconfig (-want +got):\n%s", diff)
			}
			if _, err := New(got.Config); err != nil {
				t.Errorf("New rejects the loaded config: %v", err)
			}
		})
	}
}

func TestKubeconfigErrors(t *testing.T) {
	tests := []struct{ name, content, want string }{
		{"no current context", `contexts: [{name: a, context: {cluster: c}}]`, "no current-context"},
		{"missing cluster", `current-context: a
contexts: [{name: a, context: {cluster: c}}]`, `cluster "c" of context "a" not found`},
		{"context without cluster", `current-context: a
contexts: [{name: a, context: {}}]`, "names no cluster"},
		{"missing user", `current-context: a
clusters: [{name: c, cluster: {server: "https://x"}}]
contexts: [{name: a, context: {cluster: c, user: u}}]`, `user "u" of context "a" not found`},
		{"no server", `current-context: a
clusters: [{name: c, cluster: {}}]
contexts: [{name: a, context: {cluster: c}}]`, "has no server"},
		{"exec plugin", `current-context: a
clusters: [{name: c, cluster: {server: "https://x"}}]
users: [{name: u, user: {exec: {command: gcloud}}}]
contexts: [{name: a, context: {cluster: c, user: u}}]`, "exec credential plugins are not supported"},
		{"basic auth", `current-context: a
clusters: [{name: c, cluster: {server: "https://x"}}]
users: [{name: u, user: {username: me, password: pw}}]
contexts: [{name: a, context: {cluster: c, user: u}}]`, "basic authentication"},
		{"missing CA file", `current-context: a
clusters: [{name: c, cluster: {server: "https://x", certificate-authority: nope.crt}}]
contexts: [{name: a, context: {cluster: c}}]`, "certificate-authority"},
		{"insecure with CA", `current-context: a
clusters: [{name: c, cluster: {server: "https://x", insecure-skip-tls-verify: true, certificate-authority-data: eA==}}]
contexts: [{name: a, context: {cluster: c}}]`, "excludes a certificate authority"},
		{"certificate without key", `current-context: a
clusters: [{name: c, cluster: {server: "https://x"}}]
users: [{name: u, user: {client-certificate-data: eA==}}]
contexts: [{name: a, context: {cluster: c, user: u}}]`, "needs both"},
		{"duplicate names", `clusters: [{name: c}, {name: c}]`, `duplicate cluster name "c"`},
		{"bad base64", `clusters: [{name: c, cluster: {certificate-authority-data: "!!"}}]`, "parse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), "config", tt.content)
			_, err := LoadKubeconfig(KubeconfigOptions{Path: p})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func FuzzParseKubeconfig(f *testing.F) {
	f.Add([]byte("current-context: a\nclusters: [{name: c, cluster: {server: \"https://x\"}}]\ncontexts: [{name: a, context: {cluster: c}}]\n"))
	f.Add([]byte("users: [{name: u, user: {token: t, tokenFile: f}}]"))
	f.Add([]byte("{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		kf, err := parseKubeconfig(data, "/base")
		if err != nil {
			return
		}
		for _, c := range kf.Clusters {
			if p := c.Cluster.CertificateAuthority; p != "" && !filepath.IsAbs(p) {
				t.Errorf("relative path %q left unresolved", p)
			}
		}
		// Resolving must never panic; errors are fine.
		_, _ = kf.resolve("")
	})
}
