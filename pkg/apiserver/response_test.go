package apiserver

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"
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

func TestWarningsDedupedAndTruncatedAsKubeAPIServer(t *testing.T) {
	rec := httptest.NewRecorder()
	tw := &trackingWriter{ResponseWriter: rec}
	addWarnings(tw, []string{"same", "same", ""})
	if got := rec.Header().Values("Warning"); len(got) != 1 || got[0] != `299 - "same"` {
		t.Fatalf("dedup: %q", got)
	}
	long := strings.Repeat("x", 1000)
	var many []string
	for i := range 6 {
		many = append(many, fmt.Sprintf("%d%s", i, long))
	}
	addWarnings(tw, many)
	got := rec.Header().Values("Warning")
	if len(got) != 7 {
		t.Fatalf("%d warnings, want all 7 once truncating", len(got))
	}
	for _, h := range got[1:] {
		if n := utf8.RuneCountInString(h) - len(`299 - ""`); n != warningItemRunes {
			t.Fatalf("a warning past the 4096-rune total kept %d runes, want %d", n, warningItemRunes)
		}
	}
}
