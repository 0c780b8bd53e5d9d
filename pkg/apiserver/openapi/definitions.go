package openapi

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Extension names Kubernetes clients read from the schemas.
const (
	extGVK            = "x-kubernetes-group-version-kind"
	extPatchStrategy  = "x-kubernetes-patch-strategy"
	extPatchMergeKey  = "x-kubernetes-patch-merge-key"
	extListType       = "x-kubernetes-list-type"
	extAction         = "x-kubernetes-action"
	extPreserveFields = "x-kubernetes-preserve-unknown-fields"
)

// definitions builds named schemas from Go types by reflection and keeps
// them by definition name. It is not safe for concurrent use; New owns one
// for the duration of a build.
type definitions struct {
	// schemas holds every definition built so far, by name.
	schemas map[string]*jsonSchema
	// names maps a built (or in-progress) struct type to its definition
	// name; a type is entered before its fields are walked so that
	// recursive types terminate.
	names map[reflect.Type]string
	// types maps a definition name back to its type, to detect two Go
	// types claiming the same name.
	types map[string]reflect.Type
	// markers are the comment markers of the types, kubeMarkers unless a
	// test says otherwise.
	markers markerTable
}

func newDefinitions() *definitions {
	return &definitions{
		schemas: make(map[string]*jsonSchema),
		names:   make(map[reflect.Type]string),
		types:   make(map[string]reflect.Type),
		markers: kubeMarkers,
	}
}

// Optional methods of the k8s.io/api and apimachinery types this builder
// honours, as Kubernetes' own OpenAPI generator does.
type (
	// modelNamer gives the canonical definition name of a type.
	modelNamer interface{ OpenAPIModelName() string }
	// swaggerDocer gives the type's description under "" and each field's
	// description under its JSON name.
	swaggerDocer interface{ SwaggerDoc() map[string]string }
	// schemaTyper marks a struct serialized as a scalar (Time, Quantity,
	// IntOrString, Duration).
	schemaTyper  interface{ OpenAPISchemaType() []string }
	schemaFormat interface{ OpenAPISchemaFormat() string }
	// oneOfTyper lists the scalar types an OpenAPI 3 schema accepts.
	oneOfTyper interface{ OpenAPIV3OneOfTypes() []string }
)

// opaqueObjects are struct types whose JSON form is an arbitrary object
// rather than their Go fields: an embedded object of any kind, and the
// field set of managedFields.
var opaqueObjects = map[string]bool{
	"io.k8s.apimachinery.pkg.runtime.RawExtension":  true,
	"io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1": true,
	"io.k8s.apimachinery.pkg.runtime.Unknown":       true,
}

// definitionName returns the name Kubernetes gives the definition of struct
// type t: the type's OpenAPIModelName when it has one, otherwise its Go
// import path with the host reversed and slashes turned into dots, then the
// type name ("k8s.io/api/core/v1".Pod becomes "io.k8s.api.core.v1.Pod").
func definitionName(t reflect.Type) string {
	if n, ok := reflect.Zero(t).Interface().(modelNamer); ok {
		if name := n.OpenAPIModelName(); name != "" {
			return name
		}
	}
	pkg := t.PkgPath()
	if pkg == "" {
		return t.Name()
	}
	segments := strings.Split(pkg, "/")
	host := strings.Split(segments[0], ".")
	slices.Reverse(host)
	parts := append(host, segments[1:]...)
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(p, "-", "_")
	}
	return strings.Join(parts, ".") + "." + t.Name()
}

// add builds the definition of struct type t, and of every struct type it
// references, and returns its name.
func (d *definitions) add(t reflect.Type) (string, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return "", fmt.Errorf("type %s is a %s, not a struct", t, t.Kind())
	}
	if name, ok := d.names[t]; ok {
		return name, nil
	}
	if t.Name() == "" {
		return "", fmt.Errorf("anonymous struct %s cannot be a named definition", t)
	}
	name := definitionName(t)
	if other, ok := d.types[name]; ok && other != t {
		return "", fmt.Errorf("types %s and %s both map to definition %q", other, t, name)
	}
	s := &jsonSchema{}
	d.names[t] = name
	d.types[name] = t
	d.schemas[name] = s
	docs := swaggerDoc(t)
	s.Description = docs[""]

	zero := reflect.Zero(t).Interface()
	if typer, ok := zero.(schemaTyper); ok {
		if types := typer.OpenAPISchemaType(); len(types) > 0 {
			s.Type = types[0]
		}
		if f, ok := zero.(schemaFormat); ok {
			s.Format = f.OpenAPISchemaFormat()
		}
		if o, ok := zero.(oneOfTyper); ok {
			s.OneOfTypes = o.OpenAPIV3OneOfTypes()
		}
		return name, nil
	}
	s.Type = "object"
	if opaqueObjects[name] {
		return name, nil
	}
	// +structType=atomic on the type: the object is replaced as a whole.
	if m := d.markers[name][""]; m.mapType != "" {
		s.setExt(extMapType, m.mapType)
	}
	s.Properties = make(map[string]*jsonSchema)
	if err := d.addFields(t, s, docs, false); err != nil {
		return "", fmt.Errorf("definition %s: %w", name, err)
	}
	return name, nil
}

// swaggerDoc returns the field descriptions type t publishes, or nil.
func swaggerDoc(t reflect.Type) map[string]string {
	if s, ok := reflect.Zero(t).Interface().(swaggerDocer); ok {
		return s.SwaggerDoc()
	}
	return nil
}

// addFields adds the JSON fields of struct type t to s, following
// encoding/json's rules: a field tagged "-" or unexported is skipped, an
// embedded struct without a JSON name (or tagged ",inline") contributes its
// own fields.
//
// A field is required when its tag has neither omitempty nor omitzero.
// Kubernetes decides from "+optional" comments, which are not visible at run
// time; across k8s.io/api the two agree almost everywhere, because optional
// fields are declared omitempty so that they can be left out on the wire.
func (d *definitions) addFields(t reflect.Type, s *jsonSchema, docs map[string]string, inlined bool) error {
	def := definitionName(t)
	for i := range t.NumField() {
		f := t.Field(i)
		tag, hasTag := f.Tag.Lookup("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if (f.Anonymous && name == "") || hasOption(opts, "inline") {
			if ft.Kind() == reflect.Struct {
				if err := d.addFields(ft, s, swaggerDoc(ft), true); err != nil {
					return err
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if !hasTag || name == "" {
			name = f.Name
		}
		p, err := d.typeSchema(f.Type)
		if err != nil {
			return fmt.Errorf("field %s: %w", f.Name, err)
		}
		p.Description = docs[name]
		m := d.markers.fieldMarker(def, name, f)
		if err := m.apply(p); err != nil {
			return fmt.Errorf("field %s: %w", f.Name, err)
		}
		if p.Default == nil && !hasOption(opts, "string") {
			p.Default = zeroDefault(f.Type, hasOption(opts, "omitempty"))
		}
		if strategy := f.Tag.Get("patchStrategy"); strategy != "" {
			p.setExt(extPatchStrategy, strategy)
			if m.listType == "" && p.Type == "array" && p.Items != nil && p.Items.Ref == "" && p.Items.Type != "object" &&
				slices.Contains(strings.Split(strategy, ","), "merge") {
				// A merged list of scalars with no +listType is a set:
				// entries are unique and order carries no meaning.
				p.setExt(extListType, "set")
			}
		}
		if key := f.Tag.Get("patchMergeKey"); key != "" {
			p.setExt(extPatchMergeKey, key)
		}
		if _, dup := s.Properties[name]; dup {
			if inlined {
				// encoding/json lets the shallower field win.
				continue
			}
			s.Required = slices.DeleteFunc(s.Required, func(r string) bool { return r == name })
		}
		s.Properties[name] = p
		if !hasOption(opts, "omitempty") && !hasOption(opts, "omitzero") {
			s.Required = append(s.Required, name)
		}
	}
	return nil
}

func hasOption(opts, want string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}

func (s *jsonSchema) setExt(key string, v any) {
	if s.Ext == nil {
		s.Ext = make(map[string]any)
	}
	s.Ext[key] = v
}

// typeSchema returns a fresh schema for a value of type t: a reference for a
// struct, an inline schema for everything else.
func (d *definitions) typeSchema(t reflect.Type) (*jsonSchema, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		name, err := d.add(t)
		if err != nil {
			return nil, err
		}
		return ref(name), nil
	case reflect.String:
		return &jsonSchema{Type: "string"}, nil
	case reflect.Bool:
		return &jsonSchema{Type: "boolean"}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32,
		reflect.Uint8, reflect.Uint16:
		return &jsonSchema{Type: "integer", Format: "int32"}, nil
	case reflect.Int64, reflect.Uint, reflect.Uint32, reflect.Uint64:
		return &jsonSchema{Type: "integer", Format: "int64"}, nil
	case reflect.Float32:
		return &jsonSchema{Type: "number", Format: "float"}, nil
	case reflect.Float64:
		return &jsonSchema{Type: "number", Format: "double"}, nil
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			// encoding/json writes bytes as base64.
			return &jsonSchema{Type: "string", Format: "byte"}, nil
		}
		items, err := d.typeSchema(t.Elem())
		if err != nil {
			return nil, err
		}
		return &jsonSchema{Type: "array", Items: items}, nil
	case reflect.Map:
		if k := t.Key().Kind(); k != reflect.String {
			return nil, fmt.Errorf("map key of %s is a %s; only string keys have a JSON form", t, k)
		}
		values, err := d.typeSchema(t.Elem())
		if err != nil {
			return nil, err
		}
		return &jsonSchema{Type: "object", AdditionalProperties: values}, nil
	case reflect.Interface:
		s := &jsonSchema{Type: "object"}
		s.setExt(extPreserveFields, true)
		return s, nil
	default:
		return nil, fmt.Errorf("type %s (%s) has no JSON schema", t, t.Kind())
	}
}

// addKind adds the definitions of kind k's object and, when it has one, its
// list, marked with their group version kinds, and returns their names
// (listDef is empty without a list).
func (d *definitions) addKind(k Kind) (objDef, listDef string, err error) {
	if k.Schema != nil {
		objDef, listDef, err = d.addCustom(k.GVK, k.Schema)
	} else {
		objDef, err = d.add(reflect.TypeOf(k.Object))
	}
	if err != nil {
		return "", "", err
	}
	d.addGVK(objDef, k.GVK)
	if listDef == "" && k.List != nil {
		if listDef, err = d.add(reflect.TypeOf(k.List)); err != nil {
			return "", "", err
		}
	}
	if listDef != "" {
		d.addGVK(listDef, k.GVK.GroupVersion().WithKind(k.GVK.Kind+"List"))
	}
	return objDef, listDef, nil
}

// addGVK records that definition name is the schema of gvk.
func (d *definitions) addGVK(name string, gvk schema.GroupVersionKind) {
	s := d.schemas[name]
	entry := map[string]any{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind}
	list, _ := s.Ext[extGVK].([]any)
	for _, e := range list {
		if m := e.(map[string]any); m["group"] == gvk.Group && m["version"] == gvk.Version && m["kind"] == gvk.Kind {
			return
		}
	}
	s.setExt(extGVK, append(list, entry))
}

// closure returns the names of the definitions reachable from roots,
// including the roots.
func (d *definitions) closure(roots []string) map[string]bool {
	seen := make(map[string]bool)
	var visit func(s *jsonSchema)
	visitName := func(name string) {
		if seen[name] {
			return
		}
		seen[name] = true
		if s := d.schemas[name]; s != nil {
			visit(s)
		}
	}
	visit = func(s *jsonSchema) {
		if s == nil {
			return
		}
		if s.Ref != "" {
			visitName(s.Ref)
		}
		visit(s.Items)
		visit(s.AdditionalProperties)
		for _, p := range s.Properties {
			visit(p)
		}
	}
	for _, r := range roots {
		visitName(r)
	}
	return seen
}
