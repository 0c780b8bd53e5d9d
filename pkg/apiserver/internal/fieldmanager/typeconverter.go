package fieldmanager

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/schemaconv"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// TypeConverter turns objects into structured-merge-diff values of their
// schema and back.
type TypeConverter interface {
	// ToTyped parses obj by the type its apiVersion and kind name. Options
	// relax validation (typed.AllowDuplicates for stored objects, which
	// may hold duplicate list keys written before they were checked); a
	// Go object of a built-in kind is not validated, its type being its
	// schema.
	ToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error)
	// FromTyped returns the object v holds, of kind gvk: a new object from
	// the converter's New function when it knows the kind, else an
	// unstructured one.
	FromTyped(v *typed.TypedValue, gvk schema.GroupVersionKind) (runtime.Object, error)
}

// NewTypeConverter returns the converter of the kinds whose OpenAPI
// definitions models holds; names gives the definition name of each kind.
// newObj, which may be nil, returns an empty object of a kind that has a
// Go type (nil when it has none). With preserveUnknown, objects keep fields
// their schema does not declare (custom resources that preserve them).
func NewTypeConverter(models map[string]*spec.Schema, names map[schema.GroupVersionKind]string, newObj func(schema.GroupVersionKind) runtime.Object, preserveUnknown bool) (TypeConverter, error) {
	s, err := schemaconv.ToSchemaFromOpenAPI(models, preserveUnknown)
	if err != nil {
		return nil, fmt.Errorf("fieldmanager: convert the OpenAPI models: %w", err)
	}
	p := &typed.Parser{}
	p.Schema.Types = s.Types
	c := &schemaConverter{types: make(map[schema.GroupVersionKind]typed.ParseableType, len(names)), newObj: newObj}
	for gvk, name := range names {
		t := p.Type(name)
		if !t.IsValid() {
			return nil, fmt.Errorf("fieldmanager: no schema named %q for %s", name, gvk)
		}
		c.types[gvk] = t
	}
	return c, nil
}

// NewDeducedTypeConverter returns a converter for objects without a schema
// (custom resources whose definition has none): every map is granular and
// every list atomic, as kube-apiserver deduces them.
func NewDeducedTypeConverter() TypeConverter { return deducedConverter{} }

type schemaConverter struct {
	types  map[schema.GroupVersionKind]typed.ParseableType
	newObj func(schema.GroupVersionKind) runtime.Object
}

func (c *schemaConverter) ToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	t, ok := c.types[gvk]
	if !ok {
		return nil, &missingVersionError{gvk: gvk}
	}
	if u, ok := obj.(runtime.Unstructured); ok {
		return t.FromUnstructured(u.UnstructuredContent(), opts...)
	}
	// A Go object is read in place, by reflection, without building the
	// maps of its JSON form; and since its schema was derived from its Go
	// type it cannot fail validation but for duplicate list keys, which
	// stored objects are allowed: validating would only cost time.
	v, err := value.NewValueReflect(obj)
	if err != nil {
		return nil, fmt.Errorf("fieldmanager: read the %s: %w", gvk.Kind, err)
	}
	//lint:ignore SA1019 validating a Go object against its own type's schema is half the allocations of tracking an update (BenchmarkDeploymentWrites/tracking).
	return typed.AsTypedUnvalidated(v, t.Schema, t.TypeRef), nil
}

func (c *schemaConverter) FromTyped(v *typed.TypedValue, gvk schema.GroupVersionKind) (runtime.Object, error) {
	var out runtime.Object
	if c.newObj != nil {
		out = c.newObj(gvk)
	}
	return fromTyped(v, gvk, out)
}

type deducedConverter struct{}

func (deducedConverter) ToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	u, err := toUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return typed.DeducedParseableType.FromUnstructured(u, opts...)
}

func (deducedConverter) FromTyped(v *typed.TypedValue, gvk schema.GroupVersionKind) (runtime.Object, error) {
	return fromTyped(v, gvk, nil)
}

// toUnstructured returns the JSON value of obj as maps and slices.
func toUnstructured(obj runtime.Object) (map[string]any, error) {
	if u, ok := obj.(runtime.Unstructured); ok {
		return u.UnstructuredContent(), nil
	}
	return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
}

// fromTyped decodes v into out, or into a new unstructured object when out
// is nil, and sets its kind.
func fromTyped(v *typed.TypedValue, gvk schema.GroupVersionKind, out runtime.Object) (runtime.Object, error) {
	u, ok := v.AsValue().Unstructured().(map[string]any)
	if !ok {
		return nil, fmt.Errorf("fieldmanager: a %s is not an object", gvk.Kind)
	}
	if out == nil {
		out = &unstructured.Unstructured{Object: u}
	} else if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, out); err != nil {
		return nil, err
	}
	out.GetObjectKind().SetGroupVersionKind(gvk)
	return out, nil
}

// missingVersionError is the answer for a kind the converter has no schema
// of; structured-merge-diff then forgets the managers of that version.
type missingVersionError struct{ gvk schema.GroupVersionKind }

func (e *missingVersionError) Error() string {
	return fmt.Sprintf("fieldmanager: no schema for %s", e.gvk)
}
