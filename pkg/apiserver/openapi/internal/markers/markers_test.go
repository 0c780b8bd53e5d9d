package markers

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// writePackage writes one Go file holding src into a fresh directory and
// returns it as a package of import path example.com/api/v1.
func writePackage(t testing.TB, src string) Package {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "types.go"), []byte("package v1\n\n"+src), 0o644); err != nil {
		t.Fatal(err)
	}
	return Package{Dir: dir, ImportPath: "example.com/api/v1"}
}

const fixture = `
const (
	ModeReadWrite Mode = "ReadWrite"
	DefaultReplicas = 3
)

type Mode string

// Pod is a pod.
type Pod struct {
	TypeMeta ` + "`json:\",inline\"`" + `
	// ports are keyed by port and protocol.
	// +listType=map
	// +listMapKey=containerPort
	// +patchStrategy=merge
	// +listMapKey=protocol
	// +k8s:listType=atomic
	Ports []Port ` + "`json:\"ports,omitempty\"`" + `
	// +mapType=atomic
	Selector map[string]string ` + "`json:\"selector,omitempty\"`" + `
	// +structType=granular
	Ref *Ref ` + "`json:\"ref,omitempty\"`" + `
	// +default=ref(ModeReadWrite)
	Mode *Mode ` + "`json:\"mode,omitempty\"`" + `
	// +default=ref(DefaultReplicas)
	Replicas *int32 ` + "`json:\"replicas,omitempty\"`" + `
	// +default={"single":  {}}
	Policy *Policy ` + "`json:\"policy,omitempty\"`" + `
	// +listType=set
	Untagged []string
	// +listType=atomic
	Skipped []string ` + "`json:\"-\"`" + `
	// +listType=atomic
	unexported []string
	// No markers here.
	Plain string ` + "`json:\"plain\"`" + `
}

// +structType=atomic
type Ref struct {
	Name string ` + "`json:\"name\"`" + `
}

type (
	// +listType=set
	Names []string

	// Policy is named by its model name.
	Policy struct {
		// +listType=atomic
		Items []string ` + "`json:\"items\"`" + `
	}
)

func (Policy) OpenAPIModelName() string { return "com.example.Policy" }
`

func TestExtract(t *testing.T) {
	got, err := Extract([]Package{writePackage(t, fixture)})
	if err != nil {
		t.Fatalf("Extract: %v", err)
	}
	want := Table{
		"com.example.api.v1.Pod": {
			"ports":    {ListType: "map", ListMapKeys: []string{"containerPort", "protocol"}},
			"selector": {MapType: "atomic"},
			"ref":      {MapType: "granular"},
			"mode":     {Default: `"ReadWrite"`},
			"replicas": {Default: `3`},
			"policy":   {Default: `{"single":{}}`},
			"Untagged": {ListType: "set"},
		},
		"com.example.api.v1.Ref":   {"": {MapType: "atomic"}},
		"com.example.api.v1.Names": {"": {ListType: "set"}},
		"com.example.Policy":       {"items": {ListType: "atomic"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
}

func TestExtractRejects(t *testing.T) {
	for _, tc := range []struct {
		name, src, wantErr string
	}{
		{"unknown list type", "type T struct {\n// +listType=bag\nA []string `json:\"a\"`\n}", "+listType=bag is not atomic, set or map"},
		{"unknown map type", "type T struct {\n// +mapType=deep\nA map[string]string `json:\"a\"`\n}", "+mapType=deep is not atomic or granular"},
		{"list type on a map", "type T struct {\n// +listType=atomic\nA map[string]string `json:\"a\"`\n}", "+listType on a type that is not a list"},
		{"struct type on a list", "type T struct {\n// +structType=atomic\nA []string `json:\"a\"`\n}", "+structType on a type it does not apply to"},
		{"map type on a struct", "// +mapType=atomic\ntype T struct {\nA string `json:\"a\"`\n}", "+mapType on a type it does not apply to"},
		{"empty list map key", "type T struct {\n// +listType=map\n// +listMapKey=\nA []T `json:\"a\"`\n}", "+listMapKey has no value"},
		{"default that is not JSON", "type T struct {\n// +default=TCP\nA string `json:\"a\"`\n}", "+default=TCP is not JSON"},
		{"default naming no constant", "type T struct {\n// +default=ref(Missing)\nA string `json:\"a\"`\n}", "names no constant"},
		{"source that does not parse", "type T struct {", "expected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Extract([]Package{writePackage(t, tc.src)})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Extract error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestExtractRejectsTwoTypesWithOneName(t *testing.T) {
	a := writePackage(t, "type A struct {\n// +listType=atomic\nX []string `json:\"x\"`\n}\nfunc (A) OpenAPIModelName() string { return \"com.example.Same\" }\n")
	b := writePackage(t, "type B struct {\n// +listType=atomic\nX []string `json:\"x\"`\n}\nfunc (B) OpenAPIModelName() string { return \"com.example.Same\" }\n")
	b.ImportPath = "example.com/api/v2"
	if _, err := Extract([]Package{a, b}); err == nil || !strings.Contains(err.Error(), "claimed by") {
		t.Fatalf("Extract error = %v, want a name conflict", err)
	}
}

func TestDefinitionName(t *testing.T) {
	for _, tc := range []struct{ path, typ, want string }{
		{"k8s.io/api/core/v1", "Pod", "io.k8s.api.core.v1.Pod"},
		{"k8s.io/apimachinery/pkg/apis/meta/v1", "ObjectMeta", "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
		{"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1", "JSON", "io.k8s.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSON"},
	} {
		if got := DefinitionName(tc.path, tc.typ); got != tc.want {
			t.Errorf("DefinitionName(%q, %q) = %q, want %q", tc.path, tc.typ, got, tc.want)
		}
	}
}

func TestRenderIsDeterministicAndFormatted(t *testing.T) {
	table, err := Extract([]Package{writePackage(t, fixture)})
	if err != nil {
		t.Fatal(err)
	}
	first, err := Render(table, "openapi", "kubeMarkers", "markerTable", []string{"Code generated; DO NOT EDIT."})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		again, err := Render(table, "openapi", "kubeMarkers", "markerTable", []string{"Code generated; DO NOT EDIT."})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first, again) {
			t.Fatal("Render gave different bytes for the same table")
		}
	}
	for _, want := range []string{
		"// Code generated; DO NOT EDIT.\n\npackage openapi\n",
		"var kubeMarkers = markerTable{\n",
		`"ports":    {listType: "map", listMapKeys: []string{"containerPort", "protocol"}},`,
		"\"policy\":   {defaultJSON: `{\"single\":{}}`},",
		`"": {mapType: "atomic"},`,
	} {
		if !bytes.Contains(first, []byte(want)) {
			t.Errorf("rendered source lacks %q:\n%s", want, first)
		}
	}
}

// FuzzParse checks that any comment parses without panicking and that a
// default it accepts is valid JSON.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"+listType=map\n+listMapKey=a\n+listMapKey=b", "+default={\"a\": 1}", "+default=ref(X)", "+mapType=atomic", "+structType", "+=", "+default="} {
		f.Add(s)
	}
	pp := &parsedPackage{consts: map[string]*ast.BasicLit{}}
	f.Fuzz(func(t *testing.T, comment string) {
		for _, kind := range []typeKind{kindOther, kindStruct, kindList, kindMap} {
			m, err := pp.parse(strings.Split(comment, "\n"), kind)
			if err != nil {
				continue
			}
			if m.Default != "" && !json.Valid([]byte(m.Default)) {
				t.Fatalf("default %q is not JSON", m.Default)
			}
		}
	})
}
