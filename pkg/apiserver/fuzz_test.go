package apiserver

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/kplane/kplane/pkg/storage/memory"
)

// fuzzServer is a server whose handler fuzz targets call in process.
func fuzzServer(f *testing.F) (*Server, *memory.Backend) {
	backend, err := memory.New(memory.Config{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = backend.Close() })
	s, err := New(Config{Backend: backend, Admission: noServiceAccounts})
	if err != nil {
		f.Fatal(err)
	}
	return s, backend
}

func serve(s *Server, method, target, contentType string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, bytes.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	return rec
}

// FuzzWriteBodies sends arbitrary bodies to create, update and patch: the
// answer is never a 5xx, and a failed request never writes.
func FuzzWriteBodies(f *testing.F) {
	s, backend := fuzzServer(f)
	seed := serve(s, "POST", podPath("default", ""), "application/json", []byte(`{"metadata":{"name":"seed"},"spec":{"containers":[{"name":"c","image":"i"}]}}`))
	if seed.Code != 201 {
		f.Fatalf("seed: %d %s", seed.Code, seed.Body)
	}
	for _, b := range []string{
		`{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i"}]}}`,
		`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"seed","resourceVersion":"1"}}`,
		`[{"op":"replace","path":"/spec/containers/0/image","value":"x"}]`,
		`{"spec":{"containers":[{"name":"d","image":"busybox"}]}}`,
		"metadata:\n  name: y\n",
		`{"metadata":{"name":"seed","finalizers":["a/b"]}}`,
		"\x6b\x38\x73\x00\x0a\x00",
		`{"apiVersion":`,
		`[1,2]`,
		`"pod"`,
		`{"metadata":{"name":"seed","resourceVersion":"abc"}}`,
		`{"metadata":{"name":"seed","uid":"other"}}`,
		`{"apiVersion":"apps/v1","kind":"Pod","metadata":{"name":"seed"}}`,
		"a: [",
	} {
		for op := range uint8(6) {
			f.Add(op, []byte(b))
		}
	}
	f.Fuzz(func(t *testing.T, op uint8, body []byte) {
		before, err := backend.CurrentRevision(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var rec *httptest.ResponseRecorder
		switch op % 6 {
		case 0:
			rec = serve(s, "POST", podPath("default", ""), "application/json", body)
		case 1:
			rec = serve(s, "POST", podPath("default", ""), "application/yaml", body)
		case 2:
			rec = serve(s, "PUT", podPath("default", "seed"), "application/json", body)
		case 3:
			rec = serve(s, "PATCH", podPath("default", "seed"), "application/json-patch+json", body)
		case 4:
			rec = serve(s, "PATCH", podPath("default", "seed")+"/status", "application/strategic-merge-patch+json", body)
		case 5:
			rec = serve(s, "POST", podPath("default", ""), protobufType, body)
		}
		if rec.Code >= 500 {
			t.Fatalf("op %d: %d %s", op%6, rec.Code, rec.Body)
		}
		after, err := backend.CurrentRevision(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if rec.Code >= 300 && after != before {
			t.Fatalf("op %d: failed request (%d) wrote: revision %d -> %d", op%6, rec.Code, before, after)
		}
		// Keep the seed pod around and the store small.
		if rec.Code == 201 {
			serve(s, "DELETE", podPath("default", "")+"?fieldSelector=metadata.name!%3Dseed", "", nil)
		}
	})
}

// FuzzListQuery sends arbitrary list and watch parameters: the answer is
// a 200 or a 4xx, never a 5xx.
func FuzzListQuery(f *testing.F) {
	s, _ := fuzzServer(f)
	for _, q := range []string{"app=web", "a in (b,c),!d", "x notin ()", "a=b=c", ""} {
		f.Add(q, "metadata.name=x", "10", "", "")
		f.Add(q, "spec.nodeName!=n,status.phase=Running", "", "abc", "0")
		f.Add("", "metadata.name==\\,", "-1", "", "NotOlderThan")
	}
	// Malformed values kube-apiserver answers with 400 or tolerates.
	f.Add("a==b==c", "a==b==c", "abc", "garbage", "Bogus")
	f.Add("a in (b", "x=y", "99999999999999999999", "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiJ4In0", "Exact")
	f.Add("A!", "a", "-9223372036854775808", "\x00", "")
	f.Fuzz(func(t *testing.T, label, field, limit, cont, rvMatch string) {
		v := url.Values{}
		v.Set("labelSelector", label)
		v.Set("fieldSelector", field)
		v.Set("limit", limit)
		v.Set("continue", cont)
		v.Set("resourceVersionMatch", rvMatch)
		v.Set("resourceVersion", "1")
		rec := serve(s, http.MethodGet, "/api/v1/pods?"+v.Encode(), "", nil)
		if rec.Code >= 500 {
			t.Fatalf("%s: %d %s", v.Encode(), rec.Code, rec.Body)
		}
	})
}
