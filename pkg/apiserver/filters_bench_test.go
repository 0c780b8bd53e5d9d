package apiserver

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kplane/kplane/pkg/audit"
	"github.com/kplane/kplane/pkg/storage/memory"
)

// BenchmarkFilters measures what the request filters cost per request in
// front of a router that does nothing: the request info parse, the
// in-flight limits, the timeout, and audit at Metadata to io.Discard.
func BenchmarkFilters(b *testing.B) {
	router := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	metadata := &audit.Policy{Rules: []audit.PolicyRule{{Level: audit.LevelMetadata}}}
	for _, bc := range []struct {
		name string
		cfg  func(*Config)
	}{
		{"off", func(c *Config) { c.MaxRequestsInFlight, c.MaxMutatingRequestsInFlight, c.RequestTimeout = -1, -1, -1 }},
		{"limits", func(c *Config) { c.RequestTimeout = -1 }},
		{"limits+timeout", func(*Config) {}},
		{"limits+timeout+audit", func(c *Config) {
			a, err := audit.New(audit.Config{Policy: metadata, Sink: io.Discard})
			if err != nil {
				b.Fatal(err)
			}
			c.Auditor = a
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			backend, err := memory.New(memory.Config{})
			if err != nil {
				b.Fatal(err)
			}
			defer backend.Close()
			cfg := Config{Backend: backend, Admission: noServiceAccounts}
			bc.cfg(&cfg)
			s, err := New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			h := s.withFilters(router)
			req := httptest.NewRequest("GET", "/api/v1/namespaces/default/pods/p1", nil)
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(httptest.NewRecorder(), req)
			}
		})
	}
}
