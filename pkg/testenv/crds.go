package testenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/kplane/kplane/pkg/apiextensions"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/registry"
)

// CustomResourceDefinitions describes apiextensions.k8s.io/v1
// customresourcedefinitions, for WaitFor and kplane's typed clients.
var CustomResourceDefinitions = client.Resource[*apiextensionsv1.CustomResourceDefinition]{
	GroupVersionResource: apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"),
	Kind:                 "CustomResourceDefinition",
}

// WithCRDs installs crds when the environment starts, before any object
// of WithObjects is created and before any controller runs, and waits
// until each is Established (its custom resources served). The CRDs are
// not modified. A CRD the server refuses fails Start with the server's
// reasons.
func WithCRDs(crds ...*apiextensionsv1.CustomResourceDefinition) Option {
	return func(o *options) { o.crds = append(o.crds, crds...) }
}

// WithCRDsFromDir installs, as WithCRDs does, the CRDs in paths: files,
// or directories whose .yaml, .yml and .json files are read (sub
// directories included, in lexical order), as envtest's
// CRDInstallOptions.Paths are. A file may hold several documents separated
// by "---" lines, or a List of CRDs. Every document must be an
// apiextensions.k8s.io/v1 CustomResourceDefinition: anything else, a path
// that does not exist or a directory without CRDs fails Start with the
// file and document named.
func WithCRDsFromDir(paths ...string) Option {
	return func(o *options) { o.crdPaths = append(o.crdPaths, paths...) }
}

// readCRDs reads the CRDs of every path.
func readCRDs(paths []string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, root := range paths {
		before := len(out)
		err := walkManifests(root, func(p string, data []byte) error {
			crds, err := parseCRDs(p, data)
			out = append(out, crds...)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("testenv: read CRDs from %s: %w", root, err)
		}
		if len(out) == before {
			return nil, fmt.Errorf("testenv: read CRDs from %s: no CustomResourceDefinition found", root)
		}
	}
	return out, nil
}

// walkManifests calls each with the path and contents of root, when it is
// a file, or of every .yaml, .yml and .json file below it.
func walkManifests(root string, each func(path string, data []byte) error) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if p != root {
			switch strings.ToLower(filepath.Ext(p)) {
			case ".yaml", ".yml", ".json":
			default:
				return nil
			}
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return each(p, data)
	})
}

// parseCRDs parses the documents of one file.
func parseCRDs(file string, data []byte) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	for i, doc := range splitYAML(data) {
		source := fmt.Sprintf("%s, document %d", file, i+1)
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		if s := strings.TrimSpace(string(js)); s == "" || s == "null" {
			continue
		}
		var tm struct {
			metav1.TypeMeta
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(js, &tm); err != nil {
			return nil, fmt.Errorf("%s: not an object: %w", source, err)
		}
		if strings.HasSuffix(tm.Kind, "List") {
			for j, item := range tm.Items {
				crd, err := decodeCRD(fmt.Sprintf("%s, item %d", source, j+1), item)
				if err != nil {
					return nil, err
				}
				out = append(out, crd)
			}
			continue
		}
		crd, err := decodeCRD(source, js)
		if err != nil {
			return nil, err
		}
		out = append(out, crd)
	}
	return out, nil
}

// decodeCRD decodes one document, which must be a v1 CRD.
func decodeCRD(source string, js []byte) (*apiextensionsv1.CustomResourceDefinition, error) {
	var tm metav1.TypeMeta
	if err := json.Unmarshal(js, &tm); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	switch {
	case tm.Kind != "CustomResourceDefinition":
		return nil, fmt.Errorf("%s: a %s %q is not a CustomResourceDefinition", source, tm.APIVersion, tm.Kind)
	case tm.APIVersion == "apiextensions.k8s.io/v1beta1":
		return nil, fmt.Errorf("%s: apiextensions.k8s.io/v1beta1 CustomResourceDefinitions are not served (Kubernetes removed them in 1.22); convert it to apiextensions.k8s.io/v1", source)
	case tm.APIVersion != "apiextensions.k8s.io/v1":
		return nil, fmt.Errorf("%s: CustomResourceDefinition of unknown apiVersion %q", source, tm.APIVersion)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	strict, err := kjson.UnmarshalStrict(js, crd, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	if len(strict) > 0 {
		return nil, fmt.Errorf("%s: %w", source, errors.Join(strict...))
	}
	return crd, nil
}

// InstallCRDs creates crds through c and waits until each is Established,
// for a test that installs CustomResourceDefinitions while its controllers
// run (WithCRDs installs them before the environment is handed out). A CRD
// the server refuses is an error carrying the server's message.
func InstallCRDs(ctx context.Context, c *client.Client, crds ...*apiextensionsv1.CustomResourceDefinition) error {
	res := client.NewResource(c, CustomResourceDefinitions)
	for _, crd := range crds {
		if _, err := res.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			var se *apierrors.StatusError
			if errors.As(err, &se) && apierrors.IsInvalid(err) {
				return fmt.Errorf("testenv: CustomResourceDefinition %s refused: %s", crd.Name, se.ErrStatus.Message)
			}
			return fmt.Errorf("testenv: create CustomResourceDefinition %s: %w", crd.Name, err)
		}
	}
	for _, crd := range crds {
		_, err := Wait(ctx, c, CustomResourceDefinitions, crd.Name, func(got *apiextensionsv1.CustomResourceDefinition) bool {
			return apiextensions.IsConditionTrue(got, apiextensionsv1.Established)
		})
		if err != nil {
			return fmt.Errorf("testenv: CustomResourceDefinition %s not established: %w", crd.Name, err)
		}
	}
	return nil
}

// withCustomResources returns resources and the served versions of crds,
// described by the strategies the server will serve them with.
func withCustomResources(resources []registry.Strategy, crds []*apiextensionsv1.CustomResourceDefinition) ([]registry.Strategy, error) {
	out := slices.Clone(resources)
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			cr, err := apiextensions.NewCustomResource(crd, v.Name)
			if err != nil {
				return nil, fmt.Errorf("testenv: CustomResourceDefinition %s: %w", crd.Name, err)
			}
			out = append(out, cr)
		}
	}
	return out, nil
}
