package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/pkg/client"
)

const backupCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: backups.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: backups, kind: Backup}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              schedule: {type: string, default: "@daily"}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: vaults.example.com}
spec:
  group: example.com
  scope: Cluster
  names: {plural: vaults, kind: Vault}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
`

// Backup is a Go type for backups.example.com, as an operator writes one.
type Backup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Schedule string `json:"schedule,omitempty"`
	} `json:"spec"`
}

// DeepCopyObject implements runtime.Object.
func (b *Backup) DeepCopyObject() runtime.Object {
	cp := *b
	cp.ObjectMeta = *b.ObjectMeta.DeepCopy()
	return &cp
}

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	d := t.TempDir()
	for name, content := range files {
		p := filepath.Join(d, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

var backups = client.Resource[*Backup]{GroupVersionResource: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "backups"}, Kind: "Backup", Namespaced: true}

func TestWithCRDsFromDir(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{
		"crds/all.yaml":      backupCRD,
		"crds/README.md":     "not read",
		"objects/vault.yaml": "apiVersion: example.com/v1\nkind: Vault\nmetadata: {name: main}\nsealed: true\n",
	})
	seeded := &Backup{TypeMeta: metav1.TypeMeta{APIVersion: "example.com/v1", Kind: "Backup"}, ObjectMeta: metav1.ObjectMeta{Name: "nightly"}}
	env := Start(t, WithCRDsFromDir(filepath.Join(dir, "crds")), WithObjects(seeded), WithObjectsFromDir(filepath.Join(dir, "objects")))

	// Established when Start returns; objects of both were seeded, defaulted by the schema.
	got, err := client.NewResource(env.Client, backups).Namespace("default").Get(t.Context(), "nightly", metav1.GetOptions{})
	if err != nil || got.Spec.Schedule != "@daily" {
		t.Fatalf("seeded backup: %+v, %v", got, err)
	}
	vaults := client.Resource[*unstructured.Unstructured]{GroupVersionResource: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "vaults"}, Kind: "Vault"}
	WaitFor(t, env, vaults, "main", func(u *unstructured.Unstructured) bool { return u.Object["sealed"] == true })

	// Typed clients for the user's own type work as for built-ins.
	ns := env.Namespace(t)
	b := &Backup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hourly"}}
	b.Spec.Schedule = "@hourly"
	if _, err := client.NewResource(env.Client, backups).Create(t.Context(), b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, env, backups, ns+"/hourly", func(b *Backup) bool { return b.Spec.Schedule == "@hourly" })
}

func TestWithCRDsValue(t *testing.T) {
	t.Parallel()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.ClusterScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Kind: "Gadget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}}},
		},
	}
	env := Start(t, WithCRDs(crd))
	got := WaitFor(t, env, CustomResourceDefinitions, "gadgets.example.com", func(*apiextensionsv1.CustomResourceDefinition) bool { return true })
	if got.Status.AcceptedNames.Kind != "Gadget" {
		t.Errorf("accepted names %+v", got.Status.AcceptedNames)
	}
	if crd.Status.AcceptedNames.Kind != "" {
		t.Error("WithCRDs modified its argument")
	}
}

func TestCRDErrors(t *testing.T) {
	t.Parallel()
	invalid := strings.Replace(backupCRD, "name: backups.example.com", "name: wrong.example.com", 1)
	for _, tc := range []struct {
		name  string
		files map[string]string
		path  string
		want  []string
	}{
		{"missing path", nil, "absent", []string{"absent", "no such file"}},
		{"no CRDs", map[string]string{"notes.txt": "x"}, "", []string{"no CustomResourceDefinition found"}},
		{"not a CRD", map[string]string{"a.yaml": backupCRD + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"}, "", []string{"a.yaml, document 3", `a v1 "ConfigMap" is not a CustomResourceDefinition`}},
		{"v1beta1", map[string]string{"a.yaml": strings.Replace(backupCRD, "apiextensions.k8s.io/v1\n", "apiextensions.k8s.io/v1beta1\n", 1)}, "", []string{"a.yaml, document 1", "v1beta1 CustomResourceDefinitions are not served"}},
		{"unknown field", map[string]string{"a.yaml": strings.Replace(backupCRD, "  scope: Namespaced", "  scope: Namespaced\n  scop: x", 1)}, "", []string{"a.yaml, document 1", `unknown field "spec.scop"`}},
		{"refused", map[string]string{"a.yaml": invalid}, "", []string{"CustomResourceDefinition wrong.example.com refused", `must be spec.names.plural+"."+spec.group`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeFiles(t, tc.files)
			rec := newRecorder(t)
			inGoroutine(func() { Start(rec, WithCRDsFromDir(filepath.Join(dir, tc.path))) })
			rec.runCleanups()
			got := rec.allErrors()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("error %q lacks %q", got, w)
				}
			}
		})
	}
}
