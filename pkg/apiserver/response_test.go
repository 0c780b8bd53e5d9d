package apiserver

import (
	"net/http/httptest"
	"testing"
)

func TestNegotiate(t *testing.T) {
	s := &Server{}
	tests := []struct {
		accept string
		want   format
		err    bool
	}{
		{"", formatJSON, false},
		{"*/*", formatJSON, false},
		{"application/json", formatJSON, false},
		{"application/yaml", formatYAML, false},
		{"application/vnd.kubernetes.protobuf, application/json", formatJSON, false},
		{"application/vnd.kubernetes.protobuf,*/*", formatJSON, false},
		{kubectlGetAccept, formatTable, false},
		{"application/json;as=Table;v=v1beta1;g=meta.k8s.io", formatTable, false},
		{"application/json;as=Table;v=v1;g=meta.k8s.io;q=0.5, application/yaml", formatYAML, false},
		{"application/yaml;q=0, application/json", formatJSON, false},
		{metadataAccept, formatMetadata, false},
		{"application/json;as=Table;v=v1;g=other.io", 0, true},
		{"application/vnd.kubernetes.protobuf", 0, true},
		{"text/html", 0, true},
		{";;;,", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.accept, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.Header.Set("Accept", tc.accept)
			got, err := s.negotiate(r)
			if (err != nil) != tc.err || (!tc.err && got != tc.want) {
				t.Fatalf("got %v, %v; want %v (error %v)", got, err, tc.want, tc.err)
			}
		})
	}
}

func FuzzParseAccept(f *testing.F) {
	f.Add(kubectlGetAccept)
	f.Add(kubectlDiscoveryAccept)
	f.Add("application/json;q=0.9,application/yaml;q=1.0;x=\"a,b\"")
	f.Fuzz(func(t *testing.T, accept string) {
		ranges := parseAccept(accept)
		for _, m := range ranges {
			if m.typ == "" {
				t.Fatalf("empty media type from %q", accept)
			}
		}
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Accept", accept)
		if f, err := (&Server{}).negotiate(r); err == nil && f != formatJSON && f != formatYAML && f != formatTable && f != formatMetadata {
			t.Fatalf("unknown format %v", f)
		}
	})
}

func TestWithTypeMeta(t *testing.T) {
	gvk := scaleGVK
	for in, want := range map[string]string{
		`{}`:                  `{"kind":"Scale","apiVersion":"autoscaling/v1"}`,
		`{"metadata":{}}`:     `{"kind":"Scale","apiVersion":"autoscaling/v1","metadata":{}}`,
		`{"kind":"X","a":1}`:  `{"kind":"X","a":1}`,
		`{"apiVersion":"v1"}`: `{"apiVersion":"v1"}`,
		`[1]`:                 `[1]`,
	} {
		if got := string(withTypeMeta([]byte(in), gvk)); got != want {
			t.Errorf("%s: got %s want %s", in, got, want)
		}
	}
}
