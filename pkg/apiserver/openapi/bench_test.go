package openapi

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkNew measures building every document for kplane's resources,
// which the server does once at start.
func BenchmarkNew(b *testing.B) {
	for b.Loop() {
		if _, err := New(Config{Kinds: servedKinds()}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkServe measures answering the requests kubectl makes.
func BenchmarkServe(b *testing.B) {
	d := newDocs(b)
	for _, bc := range []struct{ name, target, accept string }{
		{"v2 protobuf", "/openapi/v2", mediaV2ProtoDeprecated},
		{"v3 index", "/openapi/v3", "application/json"},
		{"v3 api/v1", "/openapi/v3/api/v1?hash=" + d.v3["api/v1"].json.etag, "application/json"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, bc.target, nil)
			req.Header.Set("Accept", bc.accept)
			for b.Loop() {
				rec := httptest.NewRecorder()
				d.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d", rec.Code)
				}
			}
		})
	}
}
