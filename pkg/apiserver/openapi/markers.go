package openapi

//go:generate go run ./internal/markergen -o zz_generated_markers.go

import (
	"encoding/json"
	"fmt"
	"reflect"
)

// Extension names of the merge semantics Kubernetes' comment markers give.
const (
	extListMapKeys = "x-kubernetes-list-map-keys"
	extMapType     = "x-kubernetes-map-type"
)

// marker is what the comment markers of one Kubernetes API field (or, under
// the empty field name, type) say about its schema. kubeMarkers, generated
// from the sources of the API modules by internal/markergen, holds them by
// definition name and JSON field name, because comments are not visible to
// reflection.
type marker struct {
	// listType is the x-kubernetes-list-type: "atomic", "set" or "map".
	listType string
	// listMapKeys are the x-kubernetes-list-map-keys, in order.
	listMapKeys []string
	// mapType is the x-kubernetes-map-type ("atomic" or "granular") of a
	// map field, or of a struct from +structType.
	mapType string
	// defaultJSON is the JSON of the +default value.
	defaultJSON string
}

// markerTable holds markers by definition name, then JSON field name ("" for
// the type's own).
type markerTable map[string]map[string]marker

// typeMarker returns the markers declared on the named type t (behind any
// pointers), and whether there are any.
func (mt markerTable) typeMarker(t reflect.Type) (marker, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Name() == "" || t.PkgPath() == "" {
		return marker{}, false
	}
	m, ok := mt[definitionName(t)][""]
	return m, ok
}

// fieldMarker returns the markers of field f, named name in JSON, of the
// struct whose definition is def: the field's own, completed, as
// Kubernetes' generator does, by those of the field's named type (a list
// or map type's +listType, +listMapKey and +mapType, any type's +default).
func (mt markerTable) fieldMarker(def, name string, f reflect.StructField) marker {
	m := mt[def][name]
	tm, ok := mt.typeMarker(f.Type)
	if !ok {
		return m
	}
	if ft := derefType(f.Type); ft.Kind() == reflect.Slice || ft.Kind() == reflect.Map {
		if m.listType == "" && len(m.listMapKeys) == 0 {
			m.listType, m.listMapKeys = tm.listType, tm.listMapKeys
		}
		if m.mapType == "" {
			m.mapType = tm.mapType
		}
	}
	if m.defaultJSON == "" {
		m.defaultJSON = tm.defaultJSON
	}
	return m
}

func derefType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// apply sets the extensions and default m describes on property p.
func (m marker) apply(p *jsonSchema) error {
	if m.listType != "" {
		p.setExt(extListType, m.listType)
	}
	if len(m.listMapKeys) > 0 {
		keys := make([]any, len(m.listMapKeys))
		for i, k := range m.listMapKeys {
			keys[i] = k
		}
		p.setExt(extListMapKeys, keys)
	}
	if m.mapType != "" {
		p.setExt(extMapType, m.mapType)
	}
	if m.defaultJSON != "" {
		var v any
		if err := json.Unmarshal([]byte(m.defaultJSON), &v); err != nil {
			return fmt.Errorf("default %s: %w", m.defaultJSON, err)
		}
		p.Default = v
	}
	return nil
}

var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

// zeroDefault returns the default Kubernetes' generator gives a field of
// type t that has no +default: the field's JSON decoding starts from the
// zero value, so a struct value (not a pointer) defaults to {} and a
// scalar that is always written (not omitempty) to its zero. Pointers,
// lists, maps and types that decode themselves have none (nil).
func zeroDefault(t reflect.Type, omitEmpty bool) any {
	if t.Kind() == reflect.Struct && reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		if t.NumField() == 1 && t.Field(0).Anonymous {
			// A struct that only embeds another is that other type.
			return zeroDefault(t.Field(0).Type, omitEmpty)
		}
		return map[string]any{}
	case reflect.String:
		if !omitEmpty {
			return ""
		}
	case reflect.Bool:
		if !omitEmpty {
			return false
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if !omitEmpty {
			return 0
		}
	case reflect.Float32, reflect.Float64:
		if !omitEmpty {
			return 0.0
		}
	}
	return nil
}
