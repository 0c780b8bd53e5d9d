package openapi

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	openapiv2 "github.com/google/gnostic-models/openapiv2"
	openapiv3 "github.com/google/gnostic-models/openapiv3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestServeHTTP(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	d, err := New(Config{Kinds: servedKinds(), Clock: clocktesting.NewFakePassiveClock(now)})
	if err != nil {
		t.Fatal(err)
	}
	core := d.v3["api/v1"]
	tests := []struct {
		name        string
		method      string
		target      string
		header      http.Header
		wantCode    int
		wantType    string
		wantBody    []byte
		wantHeaders map[string]string
	}{
		{
			name:     "v2 as kubectl asks for it",
			target:   "/openapi/v2",
			header:   http.Header{"Accept": {"application/com.github.proto-openapi.spec.v2@v1.0+protobuf"}},
			wantCode: 200, wantType: mediaV2Proto, wantBody: d.v2Proto.data,
			wantHeaders: map[string]string{"Etag": strconv.Quote(d.v2Proto.etag), "Vary": "Accept"},
		},
		{
			name:     "v2 protobuf new spelling",
			target:   "/openapi/v2",
			header:   http.Header{"Accept": {mediaV2Proto}},
			wantCode: 200, wantType: mediaV2Proto, wantBody: d.v2Proto.data,
		},
		{
			name:     "v2 json",
			target:   "/openapi/v2",
			header:   http.Header{"Accept": {"application/json"}},
			wantCode: 200, wantType: "application/json", wantBody: d.v2JSON.data,
			wantHeaders: map[string]string{"Etag": strconv.Quote(d.v2JSON.etag)},
		},
		{
			name:     "v2 without accept",
			target:   "/openapi/v2",
			wantCode: 200, wantType: "application/json", wantBody: d.v2JSON.data,
		},
		{
			name:     "v2 quality order",
			target:   "/openapi/v2",
			header:   http.Header{"Accept": {"application/json;q=0.5, application/com.github.proto-openapi.spec.v2@v1.0+protobuf"}},
			wantCode: 200, wantType: mediaV2Proto, wantBody: d.v2Proto.data,
		},
		{
			name:     "v2 q=0 refuses",
			target:   "/openapi/v2",
			header:   http.Header{"Accept": {"application/json;q=0, text/html"}},
			wantCode: http.StatusNotAcceptable,
		},
		{
			name:     "v2 unsupported type",
			target:   "/openapi/v2",
			header:   http.Header{"Accept": {"application/yaml"}},
			wantCode: http.StatusNotAcceptable,
		},
		{
			name:     "v2 not modified",
			target:   "/openapi/v2",
			header:   http.Header{"Accept": {"application/json"}, "If-None-Match": {strconv.Quote(d.v2JSON.etag)}},
			wantCode: http.StatusNotModified,
		},
		{
			name:     "v2 stale etag",
			target:   "/openapi/v2",
			header:   http.Header{"Accept": {"application/json"}, "If-None-Match": {`"stale"`}},
			wantCode: 200, wantType: "application/json", wantBody: d.v2JSON.data,
		},
		{
			name:     "v2 head",
			method:   http.MethodHead,
			target:   "/openapi/v2",
			header:   http.Header{"Accept": {"application/json"}},
			wantCode: 200, wantType: "application/json", wantBody: []byte{},
		},
		{
			name:        "post refused",
			method:      http.MethodPost,
			target:      "/openapi/v2",
			wantCode:    http.StatusMethodNotAllowed,
			wantHeaders: map[string]string{"Allow": "GET, HEAD"},
		},
		{
			name:     "v3 index",
			target:   "/openapi/v3",
			wantCode: 200, wantType: "application/json", wantBody: d.v3Index.data,
			wantHeaders: map[string]string{"Etag": strconv.Quote(d.v3Index.etag)},
		},
		{
			name:     "v3 group version",
			target:   "/openapi/v3/api/v1",
			header:   http.Header{"Accept": {"application/json"}},
			wantCode: 200, wantType: "application/json", wantBody: core.json.data,
			wantHeaders: map[string]string{"Etag": strconv.Quote(core.json.etag), "Cache-Control": ""},
		},
		{
			name:     "v3 current hash is immutable",
			target:   "/openapi/v3/api/v1?hash=" + core.json.etag,
			header:   http.Header{"Accept": {"application/json"}},
			wantCode: 200, wantType: "application/json", wantBody: core.json.data,
			wantHeaders: map[string]string{
				"Cache-Control": "public, immutable",
				"Expires":       now.AddDate(1, 0, 0).Format(http.TimeFormat),
			},
		},
		{
			name:        "v3 outdated hash redirects",
			target:      "/openapi/v3/api/v1?hash=0123",
			header:      http.Header{"Accept": {"application/json"}},
			wantCode:    http.StatusMovedPermanently,
			wantHeaders: map[string]string{"Location": "/openapi/v3/api/v1?hash=" + core.json.etag},
		},
		{
			name:     "v3 protobuf",
			target:   "/openapi/v3/apis/apps/v1",
			header:   http.Header{"Accept": {"application/com.github.proto-openapi.spec.v3@v1.0+protobuf"}},
			wantCode: 200, wantType: mediaV3Proto, wantBody: d.v3["apis/apps/v1"].proto.data,
		},
		{
			name:     "v3 dotted group",
			target:   "/openapi/v3/apis/coordination.k8s.io/v1",
			wantCode: 200, wantType: "application/json", wantBody: d.v3["apis/coordination.k8s.io/v1"].json.data,
		},
		{
			name:     "v3 unknown group version",
			target:   "/openapi/v3/apis/batch/v1",
			wantCode: http.StatusNotFound,
		},
		{
			name:     "v3 group without version",
			target:   "/openapi/v3/apis/apps",
			wantCode: http.StatusNotFound,
		},
		{
			name:     "unknown path",
			target:   "/openapi/v4",
			wantCode: http.StatusNotFound,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = http.MethodGet
			}
			req := httptest.NewRequest(method, tt.target, nil)
			for k, v := range tt.header {
				req.Header[k] = v
			}
			rec := httptest.NewRecorder()
			d.ServeHTTP(rec, req)
			if rec.Code != tt.wantCode {
				t.Fatalf("status = %d, want %d; body %.200s", rec.Code, tt.wantCode, rec.Body.String())
			}
			if tt.wantType != "" {
				if got := rec.Header().Get("Content-Type"); got != tt.wantType {
					t.Errorf("Content-Type = %q, want %q", got, tt.wantType)
				}
			}
			if tt.wantBody != nil && !bytes.Equal(rec.Body.Bytes(), tt.wantBody) {
				t.Errorf("body differs from the cached document (%d bytes, want %d)", rec.Body.Len(), len(tt.wantBody))
			}
			for k, want := range tt.wantHeaders {
				if got := rec.Header().Get(k); got != want {
					t.Errorf("header %s = %q, want %q", k, got, want)
				}
			}
		})
	}
}

func TestProtobufDecodes(t *testing.T) {
	d := newDocs(t)
	var v2 openapiv2.Document
	if err := proto.Unmarshal(d.v2Proto.data, &v2); err != nil {
		t.Fatalf("v2 protobuf: %v", err)
	}
	if got := v2.GetSwagger(); got != "2.0" {
		t.Errorf("swagger = %q", got)
	}
	var names []string
	for _, p := range v2.GetDefinitions().GetAdditionalProperties() {
		if p.GetName() == "io.k8s.api.core.v1.Pod" {
			names = append(names, p.GetName())
		}
	}
	if diff := cmp.Diff([]string{"io.k8s.api.core.v1.Pod"}, names); diff != "" {
		t.Errorf("Pod definition (-want +got):\n%s", diff)
	}
	// Older kubectl learns from the v2 document that the server validates
	// fields: the patch operation of the kind must carry its GVK and a
	// fieldValidation query parameter.
	var patch *openapiv2.Operation
	for _, item := range v2.GetPaths().GetPath() {
		if item.GetName() == "/apis/apps/v1/namespaces/{namespace}/deployments/{name}" {
			patch = item.GetValue().GetPatch()
		}
	}
	if patch == nil {
		t.Fatal("no deployment patch operation in the v2 protobuf")
	}
	var gvk string
	for _, ext := range patch.GetVendorExtension() {
		if ext.GetName() == "x-kubernetes-group-version-kind" {
			gvk = ext.GetValue().GetYaml()
		}
	}
	for _, want := range []string{"group: apps", "version: v1", "kind: Deployment"} {
		if !strings.Contains(gvk, want) {
			t.Errorf("patch GVK extension %q lacks %q", gvk, want)
		}
	}
	var params []string
	for _, p := range patch.GetParameters() {
		if q := p.GetParameter().GetNonBodyParameter().GetQueryParameterSubSchema(); q != nil {
			params = append(params, q.GetName())
		}
	}
	if !slices.Contains(params, "fieldValidation") {
		t.Errorf("patch query parameters %v lack fieldValidation", params)
	}

	var v3 openapiv3.Document
	if err := proto.Unmarshal(d.v3["apis/apps/v1"].proto.data, &v3); err != nil {
		t.Fatalf("v3 protobuf: %v", err)
	}
	if got := v3.GetOpenapi(); got != "3.0.0" {
		t.Errorf("openapi = %q", got)
	}
}

func TestParseAccept(t *testing.T) {
	tests := []struct {
		header string
		want   []mediaRange
	}{
		{"application/json", []mediaRange{{"application", "json", 1}}},
		{"*/*", []mediaRange{{"*", "*", 1}}},
		{"text/html;q=0.2, application/json;q=0.9, */*;q=0.1", []mediaRange{{"application", "json", 0.9}, {"text", "html", 0.2}, {"*", "*", 0.1}}},
		{"application/json;q=0", nil},
		{"application/json;q=abc", nil},
		{"garbage, /json, application/", nil},
		{"Application/JSON", []mediaRange{{"application", "json", 1}}},
		{"application/json;as=Table;v=v1;g=meta.k8s.io, application/json", []mediaRange{{"application", "json", 1}, {"application", "json", 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.header, func(t *testing.T) {
			got := parseAccept(tt.header)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(mediaRange{})); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzServeHTTP checks that no path or Accept header makes the handler
// panic or answer outside the statuses it documents.
func FuzzServeHTTP(f *testing.F) {
	d := newDocs(f)
	f.Add("/openapi/v2", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")
	f.Add("/openapi/v3/api/v1", "application/json;q=0.5,*/*;q=0")
	f.Add("/openapi/v3/apis/apps/v1", ";;;,,q=")
	f.Fuzz(func(t *testing.T, path, accept string) {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.URL.Path = path
		req.Header.Set("Accept", accept)
		rec := httptest.NewRecorder()
		d.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK, http.StatusNotFound, http.StatusNotAcceptable:
		default:
			t.Fatalf("path %q accept %q: status %d", path, accept, rec.Code)
		}
	})
}
