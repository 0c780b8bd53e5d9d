package cel

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/google/cel-go/cel"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Minimal JSON sizes of values, used to bound how many fit in a request.
const (
	minStringSize       = 2 // ""
	minBoolSize         = 4 // true
	minNumberSize       = 1 // 0
	minDurationSizeJSON = 3 // as Kubernetes counts it
	minDatetimeSizeJSON = 21
	jsonDateSize        = 12
	maxDurationSizeJSON = 32
	maxDatetimeSizeJSON = 32
)

// DeclType is the CEL view of a schema node: its CEL type, how large its
// values can be (for cost estimation) and how JSON values convert to CEL
// values. A DeclType is safe for concurrent use; its fields must not be
// modified.
type DeclType struct {
	// Name is the object type name; empty for other kinds.
	Name string
	// Fields are an object's exposed properties, by CEL (escaped) name.
	Fields map[string]*DeclField
	// ElemType is the type of a list's items or a map's values.
	ElemType *DeclType
	// MaxElements bounds the number of items, properties or bytes of a value:
	// maxItems, maxProperties or maxLength (times 4 for strings, whose code
	// points take up to 4 bytes) when set, otherwise estimated from the
	// request size limit.
	MaxElements int64
	// MinSerializedSize is the shortest JSON encoding of a value.
	MinSerializedSize int64

	celType *cel.Type
	kind    declKind
	// listType and mapKeys are x-kubernetes-list-type and -list-map-keys.
	listType string
	mapKeys  []string
}

// DeclField is an exposed property of an object type.
type DeclField struct {
	// Name is the property name in JSON (unescaped).
	Name     string
	Type     *DeclType
	Required bool
}

type declKind int

const (
	kindObject declKind = iota
	kindMap
	kindList
	kindDyn // x-kubernetes-int-or-string, or an object with unknown fields only
	kindString
	kindBytes
	kindDuration
	kindTimestamp
	kindDate
	kindBool
	kindInt
	kindDouble
)

// CelType returns the CEL type values of t have.
func (t *DeclType) CelType() *cel.Type { return t.celType }

// SchemaDeclType returns the CEL type of schema s, or nil if s cannot be
// exposed to CEL (no type, or a list or map whose elements cannot be).
// Object types are named name, name.<property>, name.@items (list items) and
// name.@values (map values), recursively. isResourceRoot is true for the
// root of a resource and for x-kubernetes-embedded-resource objects: their
// apiVersion, kind, metadata.name and metadata.generateName are always
// exposed.
//
// Following Kubernetes: x-kubernetes-int-or-string is dyn; objects with
// additionalProperties are maps; unknown (preserved) fields are not exposed;
// strings of format byte, duration, date and date-time are bytes, duration
// and timestamp.
func SchemaDeclType(name string, s *apiextensionsv1.JSONSchemaProps, isResourceRoot bool) *DeclType {
	if s == nil {
		return nil
	}
	if s.XIntOrString {
		t := &DeclType{celType: cel.DynType, kind: kindDyn, MinSerializedSize: 1}
		if s.MaxLength != nil {
			t.MaxElements = 4 * zeroIfNegative(*s.MaxLength)
		} else {
			t.MaxElements = MaxRequestSizeBytes - 2
		}
		return t
	}
	if isResourceRoot {
		s = withTypeAndObjectMeta(s)
	}
	switch s.Type {
	case "array":
		if s.Items == nil || s.Items.Schema == nil {
			return nil
		}
		elem := SchemaDeclType(name+".@items", s.Items.Schema, s.Items.Schema.XEmbeddedResource)
		if elem == nil {
			return nil
		}
		t := &DeclType{celType: cel.ListType(elem.celType), kind: kindList, ElemType: elem, MinSerializedSize: 2, mapKeys: s.XListMapKeys}
		if s.XListType != nil {
			t.listType = *s.XListType
		}
		if s.MaxItems != nil {
			t.MaxElements = zeroIfNegative(*s.MaxItems)
		} else {
			t.MaxElements = (MaxRequestSizeBytes - 2) / (elem.MinSerializedSize + 1)
		}
		return t
	case "object":
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			elem := SchemaDeclType(name+".@values", s.AdditionalProperties.Schema, s.AdditionalProperties.Schema.XEmbeddedResource)
			if elem == nil {
				return nil
			}
			t := &DeclType{celType: cel.MapType(cel.StringType, elem.celType), kind: kindMap, ElemType: elem, MinSerializedSize: 2}
			if s.MaxProperties != nil {
				t.MaxElements = zeroIfNegative(*s.MaxProperties)
			} else {
				// a key of at least "" plus colon, comma and the smallest value
				t.MaxElements = (MaxRequestSizeBytes - 2) / (elem.MinSerializedSize + 6)
			}
			return t
		}
		required := map[string]bool{}
		for _, r := range s.Required {
			required[r] = true
		}
		t := &DeclType{Name: name, celType: cel.ObjectType(name), kind: kindObject, Fields: map[string]*DeclField{}, MinSerializedSize: 2}
		for _, prop := range slices.Sorted(maps.Keys(s.Properties)) {
			ps := s.Properties[prop]
			ft := SchemaDeclType(name+"."+prop, &ps, ps.XEmbeddedResource)
			if ft == nil {
				continue
			}
			if esc, ok := Escape(prop); ok {
				t.Fields[esc] = &DeclField{Name: prop, Type: ft, Required: required[prop]}
			}
			// only required properties without a default must be sent
			if required[prop] && ps.Default == nil {
				t.MinSerializedSize += int64(len(prop)) + ft.MinSerializedSize + 4
			}
		}
		return t
	case "string":
		t := &DeclType{celType: cel.StringType, kind: kindString, MinSerializedSize: minStringSize, MaxElements: MaxRequestSizeBytes - 2}
		switch s.Format {
		case "byte":
			t.celType, t.kind = cel.BytesType, kindBytes
			if s.MaxLength != nil {
				t.MaxElements = zeroIfNegative(*s.MaxLength)
			}
			return t
		case "duration":
			t.celType, t.kind, t.MinSerializedSize, t.MaxElements = cel.DurationType, kindDuration, minDurationSizeJSON, maxDurationSizeJSON
			return t
		case "date":
			t.celType, t.kind, t.MinSerializedSize, t.MaxElements = cel.TimestampType, kindDate, jsonDateSize, jsonDateSize
			return t
		case "date-time":
			t.celType, t.kind, t.MinSerializedSize, t.MaxElements = cel.TimestampType, kindTimestamp, minDatetimeSizeJSON, maxDatetimeSizeJSON
			return t
		}
		switch {
		case s.MaxLength != nil:
			// maxLength counts code points; a code point is up to 4 bytes
			t.MaxElements = 4 * zeroIfNegative(*s.MaxLength)
		case len(s.Enum) > 0:
			t.MaxElements = longestEnum(s.Enum)
		}
		return t
	case "boolean":
		return &DeclType{celType: cel.BoolType, kind: kindBool, MinSerializedSize: minBoolSize}
	case "number":
		return &DeclType{celType: cel.DoubleType, kind: kindDouble, MinSerializedSize: minNumberSize}
	case "integer":
		return &DeclType{celType: cel.IntType, kind: kindInt, MinSerializedSize: minNumberSize}
	}
	return nil
}

func zeroIfNegative(v int64) int64 {
	return max(v, 0)
}

func longestEnum(enum []apiextensionsv1.JSON) int64 {
	var n int64
	for _, e := range enum {
		var s string
		if json.Unmarshal(e.Raw, &s) == nil {
			n = max(n, int64(len(s)))
		}
	}
	return n
}

// withTypeAndObjectMeta returns s with apiVersion, kind, metadata.name and
// metadata.generateName declared as strings, copying s only if needed. Names
// are at most 253 bytes (generateName 252, leaving room for a suffix), or
// less if s says so.
func withTypeAndObjectMeta(s *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
	p := s.Properties
	if p != nil && p["kind"].Type == "string" && p["apiVersion"].Type == "string" && p["metadata"].Type == "object" &&
		p["metadata"].Properties != nil && p["metadata"].Properties["name"].Type == "string" &&
		p["metadata"].Properties["generateName"].Type == "string" {
		return s
	}
	out := *s
	out.Properties = maps.Clone(s.Properties)
	if out.Properties == nil {
		out.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
	}
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	out.Properties["kind"] = str
	out.Properties["apiVersion"] = str
	meta := p["metadata"].Properties
	out.Properties["metadata"] = apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"name":         cappedString(meta["name"], int64(validation.DNS1123SubdomainMaxLength)),
			"generateName": cappedString(meta["generateName"], int64(validation.DNS1123SubdomainMaxLength-1)),
		},
	}
	return &out
}

func cappedString(existing apiextensionsv1.JSONSchemaProps, maxLength int64) apiextensionsv1.JSONSchemaProps {
	if existing.MaxLength != nil && *existing.MaxLength < maxLength {
		maxLength = *existing.MaxLength
	}
	return apiextensionsv1.JSONSchemaProps{Type: "string", MaxLength: &maxLength}
}
