package apiserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kplane/kplane/pkg/authentication"
	"github.com/kplane/kplane/pkg/authorization"
	"github.com/kplane/kplane/pkg/storage/memory"
)

// BenchmarkGetPodAuth measures what authentication and authorization add
// to a Get, in process (no network, so that the difference is not lost in
// loopback noise): a Get with authentication off, with an x509 client
// certificate and a trivial authorizer, and with a ServiceAccount token
// (signature, claims and the ServiceAccount lookup) and the same
// authorizer.
func BenchmarkGetPodAuth(b *testing.B) {
	ca := newTestCA(b, "bench-ca", time.Now())
	cert := ca.issue(b, "alice", []string{"dev"}, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		b.Fatal(err)
	}
	x, err := authentication.NewX509(authentication.X509Config{ClientCA: ca.pool})
	if err != nil {
		b.Fatal(err)
	}
	signer, err := authentication.GenerateTokenSigner()
	if err != nil {
		b.Fatal(err)
	}
	allow := authorization.AuthorizerFunc(func(context.Context, authorization.Attributes) (authorization.Decision, string, error) {
		return authorization.DecisionAllow, "", nil
	})
	for _, bc := range []struct {
		name      string
		configure func(*Config)
		prepare   func(b *testing.B, s *Server, r *http.Request)
	}{
		{name: "none"},
		{name: "x509+authorizer",
			configure: func(c *Config) { c.Authenticator, c.Authorizer = x, allow },
			prepare: func(_ *testing.B, _ *Server, r *http.Request) {
				r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}}
			}},
		{name: "serviceaccount-token+authorizer",
			configure: func(c *Config) {
				c.Authenticator, c.Authorizer = x, allow
				c.ServiceAccountIssuer = ServiceAccountIssuerConfig{Issuer: testIssuerURL, Signer: signer}
			},
			prepare: func(b *testing.B, s *Server, r *http.Request) {
				sa, err := storeGetter{s: s}.GetServiceAccount(context.Background(), "default", "default")
				if err != nil {
					// No ServiceAccount controller runs here: make one.
					rec := httptest.NewRecorder()
					s.Handler().ServeHTTP(rec, mustRequest(b, "POST", saPath("default", ""), `{"metadata":{"name":"default"}}`, r))
					if sa, err = (storeGetter{s: s}).GetServiceAccount(context.Background(), "default", "default"); err != nil {
						b.Fatalf("create ServiceAccount: %d %s", rec.Code, rec.Body)
					}
				}
				claims, err := authentication.NewServiceAccountClaims(testIssuerURL, authentication.TokenBinding{ServiceAccount: sa}, []string{testIssuerURL}, time.Now(), time.Hour, "bench")
				if err != nil {
					b.Fatal(err)
				}
				tok, err := signer.Sign(claims)
				if err != nil {
					b.Fatal(err)
				}
				r.TLS = nil
				r.Header.Set("Authorization", "Bearer "+tok)
			}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			backend, err := memory.New(memory.Config{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = backend.Close() })
			cfg := Config{Backend: backend, Admission: noServiceAccounts}
			if bc.configure != nil {
				bc.configure(&cfg)
			}
			s, err := New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			tmpl := httptest.NewRequest("GET", podPath("default", "p"), nil)
			tmpl.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}}
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, mustRequest(b, "POST", podPath("default", ""), string(podJSON(b, "p")), tmpl))
			if rec.Code != http.StatusCreated {
				b.Fatalf("create: %d %s", rec.Code, rec.Body)
			}
			if bc.prepare != nil {
				bc.prepare(b, s, tmpl)
			}
			b.Run("get", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					r := tmpl.Clone(context.Background())
					w := httptest.NewRecorder()
					s.Handler().ServeHTTP(w, r)
					if w.Code != http.StatusOK {
						b.Fatalf("get: %d %s", w.Code, w.Body)
					}
				}
			})
			// The filters alone: what the request path adds to every request.
			b.Run("filters", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					r := tmpl.Clone(context.Background())
					if _, ok := s.filter(httptest.NewRecorder(), r); !ok {
						b.Fatal("refused")
					}
				}
			})
		})
	}
}

// mustRequest is a request like tmpl (its TLS state and headers) for
// method, path and body.
func mustRequest(b *testing.B, method, path, body string, tmpl *http.Request) *http.Request {
	b.Helper()
	r := httptest.NewRequest(method, path, stringsReader(body))
	r.Header = tmpl.Header.Clone()
	r.Header.Set("Content-Type", "application/json")
	r.TLS = tmpl.TLS
	return r
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }
