package schema

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// TestRealCRDs checks CRDs that real clusters accept (for example
// cert-manager's deploy/crds and prometheus-operator's
// example/prometheus-operator-crd-full) from the directory in
// KPLANE_CRD_DIR: their schemas must pass ValidateStructural and
// ValidateSchema, and a minimal resource must survive prune, default and
// validate. The CRDs are not copied into this repository.
func TestRealCRDs(t *testing.T) {
	dir := os.Getenv("KPLANE_CRD_DIR")
	if dir == "" {
		t.Skip("KPLANE_CRD_DIR not set")
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in %s: %v", dir, err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.Unmarshal(b, crd); err != nil {
				t.Fatal(err)
			}
			for i, ver := range crd.Spec.Versions {
				if ver.Schema == nil || ver.Schema.OpenAPIV3Schema == nil {
					continue
				}
				s := ver.Schema.OpenAPIV3Schema
				p := schemaPathFor(i)
				start := time.Now()
				for _, e := range ValidateStructural(p, s) {
					t.Errorf("%s: ValidateStructural: %v", ver.Name, e)
				}
				for _, e := range ValidateSchema(p, s) {
					t.Errorf("%s: ValidateSchema: %v", ver.Name, e)
				}
				ss, err := NewStructural(s)
				if err != nil {
					t.Fatalf("%s: NewStructural: %v", ver.Name, err)
				}
				v, err := NewValidator(s)
				if err != nil {
					t.Fatalf("%s: NewValidator: %v", ver.Name, err)
				}
				obj := object(t, `{"apiVersion":"`+crd.Spec.Group+`/`+ver.Name+`","kind":"`+crd.Spec.Names.Kind+`","metadata":{"name":"x","namespace":"default"},"spec":{},"unknown":1}`)
				if got := Prune(obj, ss, true); len(got) != 1 || got[0] != "unknown" {
					t.Errorf("%s: pruned %v, want [unknown]", ver.Name, got)
				}
				Default(obj, ss)
				errs := v.Validate(nil, obj)
				t.Logf("%s: checked in %v; a bare spec gives %d errors: %v", ver.Name, time.Since(start), len(errs), errs)
			}
		})
	}
}
