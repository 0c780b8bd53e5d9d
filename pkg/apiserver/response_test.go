package apiserver

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestNegotiateAccept checks the format chosen for an Accept header, on a
// built-in resource, a custom resource and for an error, against what
// kube-apiserver's negotiation (goautoneg's clause order, then each
// clause against JSON, YAML and protobuf) gives.
func TestNegotiateAccept(t *testing.T) {
	var (
		json     = format{media: mediaJSON}
		yaml     = format{media: mediaYAML}
		pb       = format{media: mediaProtobuf}
		table    = format{media: mediaJSON, view: viewTable, version: "v1"}
		metaJSON = format{media: mediaJSON, view: viewMetadata, version: "v1"}
		metaPB   = format{media: mediaProtobuf, view: viewMetadata, version: "v1"}
		none     = format{media: -1}
	)
	tests := []struct {
		accept              string
		builtin, custom, st format
	}{
		{"", json, json, json},
		{"*/*", json, json, json},
		{"*", json, json, json},
		{"application/*", json, json, json},
		{"application/json", json, json, json},
		{"application/yaml", yaml, yaml, yaml},
		{protobufType, pb, none, pb},
		{protobufType + ";stream=watch", pb, none, pb},
		{protobufType + ", application/json", pb, json, pb},
		{protobufType + ",*/*", pb, json, pb},
		{"application/json, " + protobufType, json, json, json},
		// q orders the clauses; a wildcard comes after a type.
		{"application/json;q=0.5, " + protobufType, pb, json, pb},
		{protobufType + ";q=0.9, application/json", json, json, json},
		{"*/*, " + protobufType, pb, json, pb},
		{"application/*, application/yaml", yaml, yaml, yaml},
		// q=0 clauses are still tried, last, as goautoneg keeps them.
		{"application/yaml;q=0, application/json", json, json, json},
		{"application/yaml;q=0", yaml, yaml, yaml},
		{"application/json;q=bad, application/yaml", yaml, yaml, yaml},
		{kubectlGetAccept, table, table, json},
		{"application/json;as=Table;v=v1beta1;g=meta.k8s.io", format{media: mediaJSON, view: viewTable, version: "v1beta1"}, format{media: mediaJSON, view: viewTable, version: "v1beta1"}, none},
		{"application/yaml;as=Table;v=v1;g=meta.k8s.io", format{media: mediaYAML, view: viewTable, version: "v1"}, format{media: mediaYAML, view: viewTable, version: "v1"}, none},
		{"application/json;as=Table;v=v1;g=meta.k8s.io;q=0.5, application/yaml", yaml, yaml, yaml},
		// No Table in protobuf: the next clause is taken, as kube-apiserver.
		{protobufType + ";as=Table;v=v1;g=meta.k8s.io, application/json", json, json, json},
		{protobufType + ";as=Table;v=v1;g=meta.k8s.io", none, none, none},
		{metadataAccept, metaJSON, metaJSON, json},
		{protobufType + ";as=PartialObjectMetadataList;g=meta.k8s.io;v=v1," + metadataAccept, metaPB, metaPB, json},
		{protobufType + ";as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1", format{media: mediaProtobuf, view: viewMetadata, version: "v1beta1"}, format{media: mediaProtobuf, view: viewMetadata, version: "v1beta1"}, none},
		{"application/json;as=Table;v=v1;g=other.io", none, none, none},
		{"application/json;as=Scale;v=v1;g=autoscaling", none, none, none},
		{"application/json;g=meta.k8s.io", none, none, none},
		{"application/json;stream=other, application/yaml", yaml, yaml, yaml},
		{"application/yaml;stream=watch, application/json", json, json, json},
		{"application/json;sv=v1", json, json, none},
		{"application/json;sv=v2", none, none, none},
		{"application/json;pretty=1;x=y", json, json, json},
		{"Application/JSON", none, none, none},
		{"text/html", none, none, none},
		{";;;,", none, none, none},
	}
	for _, tc := range tests {
		t.Run(tc.accept, func(t *testing.T) {
			for _, c := range []struct {
				name string
				rs   restriction
				want format
			}{{"built-in", restrictNone, tc.builtin}, {"custom", restrictCustom, tc.custom}, {"error", restrictError, tc.st}} {
				got, ok := negotiateMedia(tc.accept, c.rs)
				if !ok {
					got = none
				}
				if got != c.want {
					t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
				}
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
		if f, err := (&Server{}).negotiate(r, nil); err == nil && (f.media < mediaJSON || f.media > mediaProtobuf || f.view < viewObject || f.view > viewMetadata || f.media == mediaProtobuf && f.view == viewTable) {
			t.Fatalf("unknown format %+v", f)
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
