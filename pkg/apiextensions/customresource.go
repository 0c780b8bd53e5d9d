package apiextensions

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kplane/kplane/pkg/registry"
)

// CustomResource is the strategy of one served version of a CRD. Besides
// registry.Strategy it prunes unknown fields and converts to tables with
// the version's printer columns.
type CustomResource struct {
	*registry.Resource[*unstructured.Unstructured]
	crd     *CRD
	version *apiextensionsv1.CustomResourceDefinitionVersion
	// storage is the group version objects are stored in.
	storage schema.GroupVersion
	columns []column
	schema  *versionSchema
}

var (
	_ registry.Pruner         = (*CustomResource)(nil)
	_ registry.TableConvertor = (*CustomResource)(nil)
)

// NewCustomResource returns the strategy of version of crd, which must be
// a valid CRD serving that version. Names come from the CRD's accepted
// names, as kube-apiserver serves them. crd is not kept: later changes of
// the caller's copy do not reach the strategy.
func NewCustomResource(crd *CRD, version string) (*CustomResource, error) {
	crd = crd.DeepCopy()
	var v *apiextensionsv1.CustomResourceDefinitionVersion
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == version {
			v = &crd.Spec.Versions[i]
		}
	}
	if v == nil {
		return nil, fmt.Errorf("apiextensions: %s has no version %s", crd.Name, version)
	}
	names := crd.Status.AcceptedNames
	if names.Kind == "" {
		names = crd.Spec.Names
	}
	cr := &CustomResource{
		crd:     crd,
		version: v,
		storage: schema.GroupVersion{Group: crd.Spec.Group, Version: StorageVersion(crd)},
	}
	var err error
	if cr.columns, err = newColumns(v.AdditionalPrinterColumns); err != nil {
		return nil, fmt.Errorf("apiextensions: %s %s: %w", crd.Name, version, err)
	}
	if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
		if cr.schema, err = newVersionSchema(v.Schema.OpenAPIV3Schema); err != nil {
			return nil, fmt.Errorf("apiextensions: %s %s: %w", crd.Name, version, err)
		}
	}
	status := v.Subresources != nil && v.Subresources.Status != nil
	scale := v.Subresources != nil && v.Subresources.Scale != nil
	r := &registry.Resource[*unstructured.Unstructured]{
		Meta: registry.Info{
			GVK:        schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: names.Kind},
			Resource:   crd.Spec.Names.Plural,
			Singular:   names.Singular,
			ListKind:   names.ListKind,
			ShortNames: names.ShortNames,
			Categories: names.Categories,
			Namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
			Status:     status,
			Scale:      scale,
		},
		NewFunc:     func() *unstructured.Unstructured { return &unstructured.Unstructured{} },
		NewListFunc: func() runtime.Object { return &unstructured.UnstructuredList{} },
		Spec: func(u *unstructured.Unstructured) any {
			// Everything but metadata (and status, when it has its own
			// subresource) counts: Kubernetes bumps generation on any of it.
			rest := maps.Clone(u.Object)
			delete(rest, "metadata")
			if status {
				delete(rest, "status")
			}
			return rest
		},
		Defaults: func(u *unstructured.Unstructured) {
			if cr.schema != nil {
				cr.schema.defaults(u.Object)
			}
		},
		Fields: cr.selectableFields,
	}
	if status {
		r.CopyStatus = func(dst, src *unstructured.Unstructured) {
			if st, ok := src.Object["status"]; ok {
				dst.Object["status"] = runtime.DeepCopyJSONValue(st)
			} else {
				delete(dst.Object, "status")
			}
		}
		r.ResetStatus = func(u *unstructured.Unstructured) { delete(u.Object, "status") }
	}
	if scale {
		sc := v.Subresources.Scale
		r.Replicas = func(u *unstructured.Unstructured) (int32, int32, string) {
			desired, _ := intAt(u.Object, sc.SpecReplicasPath)
			observed, _ := intAt(u.Object, sc.StatusReplicasPath)
			selector := ""
			if sc.LabelSelectorPath != nil {
				if s, ok := valueAt(u.Object, *sc.LabelSelectorPath).(string); ok {
					selector = s
				}
			}
			return int32(desired), int32(observed), selector
		}
		r.SetReplicasFunc = func(u *unstructured.Unstructured, n int32) {
			setAt(u.Object, sc.SpecReplicasPath, int64(n))
		}
	}
	cr.Resource = r
	return cr, nil
}

// CRD returns the CRD the strategy serves (read only).
func (cr *CustomResource) CRD() *CRD { return cr.crd }

// StorageVersion is the group version objects of the resource are stored in.
func (cr *CustomResource) StorageVersion() schema.GroupVersion { return cr.storage }

// Schema returns the version's openAPIV3Schema (read only), nil when it
// has none.
func (cr *CustomResource) Schema() *apiextensionsv1.JSONSchemaProps {
	if cr.version.Schema == nil {
		return nil
	}
	return cr.version.Schema.OpenAPIV3Schema
}

// DeprecationWarning returns the warning requests of a deprecated version
// get, "" for a version that is not deprecated.
func (cr *CustomResource) DeprecationWarning() string {
	if !cr.version.Deprecated {
		return ""
	}
	if cr.version.DeprecationWarning != nil {
		return *cr.version.DeprecationWarning
	}
	gv := schema.GroupVersion{Group: cr.crd.Spec.Group, Version: cr.version.Name}
	return fmt.Sprintf("%s %s is deprecated", gv, cr.Meta.GVK.Kind)
}

// HasDefaults reports whether the version's schema sets any default.
func (cr *CustomResource) HasDefaults() bool { return cr.schema != nil && cr.schema.hasDefaults }

// Prune implements registry.Pruner.
func (cr *CustomResource) Prune(obj runtime.Object) []string {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || cr.schema == nil {
		return nil
	}
	return cr.schema.prune(u.Object)
}

// Validate implements registry.Strategy: metadata, then the schema and its
// validation rules.
func (cr *CustomResource) Validate(obj runtime.Object) field.ErrorList {
	errs := cr.Resource.Validate(obj)
	return append(errs, cr.validateContent(obj, nil)...)
}

// ValidateUpdate implements registry.Strategy; transition rules compare
// with old.
func (cr *CustomResource) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	errs := cr.Resource.ValidateUpdate(obj, old)
	return append(errs, cr.validateContent(obj, old)...)
}

func (cr *CustomResource) validateContent(obj, old runtime.Object) field.ErrorList {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || cr.schema == nil {
		return nil
	}
	var oldContent map[string]any
	if o, ok := old.(*unstructured.Unstructured); ok {
		oldContent = o.Object
	}
	return cr.schema.validate(u.Object, oldContent)
}

func (cr *CustomResource) selectableFields(u *unstructured.Unstructured) fields.Set {
	if len(cr.version.SelectableFields) == 0 {
		return nil
	}
	out := fields.Set{}
	for _, sf := range cr.version.SelectableFields {
		name := strings.TrimPrefix(sf.JSONPath, ".")
		switch v := valueAt(u.Object, sf.JSONPath).(type) {
		case string:
			out[name] = v
		case bool:
			out[name] = strconv.FormatBool(v)
		case int64:
			out[name] = strconv.FormatInt(v, 10)
		case float64:
			out[name] = strconv.FormatFloat(v, 'f', -1, 64)
		default:
			out[name] = ""
		}
	}
	return out
}

// valueAt returns the value at a simple JSON path (".spec.replicas"), or nil.
func valueAt(obj map[string]any, path string) any {
	var cur any = obj
	for _, seg := range strings.Split(strings.TrimPrefix(path, "."), ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[seg]
	}
	return cur
}

// intAt returns the integer at a simple JSON path.
func intAt(obj map[string]any, path string) (int64, bool) {
	switch v := valueAt(obj, path).(type) {
	case int64:
		return v, true
	case float64:
		return int64(v), true
	}
	return 0, false
}

// setAt sets the value at a simple JSON path, making the objects on the way.
func setAt(obj map[string]any, path string, value any) {
	segs := strings.Split(strings.TrimPrefix(path, "."), ".")
	cur := obj
	for _, seg := range segs[:len(segs)-1] {
		next, ok := cur[seg].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[seg] = next
		}
		cur = next
	}
	cur[segs[len(segs)-1]] = value
}

func sortedKeys(m map[string]any) []string {
	return slices.Sorted(maps.Keys(m))
}
