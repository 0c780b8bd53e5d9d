package cel

import (
	"encoding/base64"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"google.golang.org/protobuf/types/known/structpb"
)

// The type names of mutation expressions, as Kubernetes declares them:
// JSONPatch operations, and apply configurations rooted at Object whose
// nested objects are named by their field path (Object.spec.template).
const (
	JSONPatchTypeName = "JSONPatch"
	ObjectTypeName    = "Object"
)

// The result types of MutatingAdmissionPolicy expressions.
var (
	// JSONPatchType is the type of one JSON patch operation.
	JSONPatchType = types.NewObjectType(JSONPatchTypeName)
	// JSONPatchListType is what a JSONPatch mutation's expression returns.
	JSONPatchListType = cel.ListType(JSONPatchType)
	// ApplyConfigurationType is what an ApplyConfiguration mutation's
	// expression returns.
	ApplyConfigurationType = types.NewObjectType(ObjectTypeName)
)

// mutationProvider declares the JSONPatch type and the Object types of
// apply configurations, whose every field is dynamically typed (an
// Object's schema is the resource's, which the expression does not know
// when it is compiled), and builds their values.
type mutationProvider struct{ base types.Provider }

var _ types.Provider = mutationProvider{}

func isObjectTypeName(name string) bool {
	return name == ObjectTypeName || strings.HasPrefix(name, ObjectTypeName+".")
}

func (p mutationProvider) EnumValue(name string) ref.Val { return p.base.EnumValue(name) }

func (p mutationProvider) FindIdent(name string) (ref.Val, bool) { return p.base.FindIdent(name) }

func (p mutationProvider) FindStructType(name string) (*types.Type, bool) {
	if name == JSONPatchTypeName || isObjectTypeName(name) {
		return types.NewTypeTypeWithParam(types.NewObjectType(name)), true
	}
	return p.base.FindStructType(name)
}

func (p mutationProvider) FindStructFieldNames(name string) ([]string, bool) {
	switch {
	case name == JSONPatchTypeName:
		return []string{"from", "op", "path", "value"}, true
	case isObjectTypeName(name):
		return nil, true
	}
	return p.base.FindStructFieldNames(name)
}

func (p mutationProvider) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	switch {
	case name == JSONPatchTypeName:
		switch field {
		case "op", "path", "from":
			return &types.FieldType{Type: types.StringType}, true
		case "value":
			return &types.FieldType{Type: types.DynType}, true
		}
		return nil, false
	case isObjectTypeName(name):
		return &types.FieldType{Type: types.DynType}, true
	}
	return p.base.FindStructFieldType(name, field)
}

func (p mutationProvider) NewValue(name string, fields map[string]ref.Val) ref.Val {
	switch {
	case name == JSONPatchTypeName:
		op := JSONPatchOp{}
		for k, v := range fields {
			if k == "value" {
				op.value = v
				continue
			}
			s, ok := v.(types.String)
			if !ok {
				return types.NewErr("JSONPatch field %s must be a string, got %s", k, v.Type().TypeName())
			}
			switch k {
			case "op":
				op.Op = string(s)
			case "path":
				op.Path = string(s)
			case "from":
				op.From = string(s)
			default:
				return types.NewErr("no such field %q in JSONPatch", k)
			}
		}
		return &op
	case isObjectTypeName(name):
		return &objectVal{name: name, fields: fields}
	}
	return p.base.NewValue(name, fields)
}

// JSONPatchOp is a JSONPatch value: one RFC 6902 operation.
type JSONPatchOp struct {
	Op, Path, From string
	// value is nil when the operation has none.
	value ref.Val
}

var _ ref.Val = (*JSONPatchOp)(nil)

// Value implements ref.Val.
func (o *JSONPatchOp) Value() any { return o }

// JSONValue returns the operation's value as JSON-like Go values; ok is
// false when the operation has none.
func (o *JSONPatchOp) JSONValue() (v any, ok bool, err error) {
	if o.value == nil {
		return nil, false, nil
	}
	v, err = JSONValue(o.value)
	return v, err == nil, err
}

// ConvertToNative implements ref.Val.
func (o *JSONPatchOp) ConvertToNative(t reflect.Type) (any, error) {
	if t == reflect.TypeOf(o) {
		return o, nil
	}
	return nil, fmt.Errorf("type conversion error from JSONPatch to %v", t)
}

// ConvertToType implements ref.Val.
func (o *JSONPatchOp) ConvertToType(t ref.Type) ref.Val {
	if t == types.TypeType {
		return JSONPatchType
	}
	return types.NewErr("type conversion error from JSONPatch to %s", t.TypeName())
}

// Equal implements ref.Val.
func (o *JSONPatchOp) Equal(other ref.Val) ref.Val {
	p, ok := other.(*JSONPatchOp)
	if !ok || p.Op != o.Op || p.Path != o.Path || p.From != o.From || (p.value == nil) != (o.value == nil) {
		return types.False
	}
	if o.value == nil {
		return types.True
	}
	return o.value.Equal(p.value)
}

// Type implements ref.Val.
func (o *JSONPatchOp) Type() ref.Type { return JSONPatchType }

// objectVal is an Object (or Object.<path>) value: an apply configuration
// or a part of one.
type objectVal struct {
	name   string
	fields map[string]ref.Val
}

var (
	_ ref.Val         = (*objectVal)(nil)
	_ traits.Indexer  = (*objectVal)(nil)
	_ traits.Receiver = (*objectVal)(nil)
)

// ConvertToNative implements ref.Val: an Object converts to JSON values.
func (o *objectVal) ConvertToNative(t reflect.Type) (any, error) {
	v, err := JSONValue(o)
	if err != nil {
		return nil, err
	}
	switch t {
	case reflect.TypeOf(map[string]any{}), reflect.TypeFor[any]():
		return v, nil
	case reflect.TypeOf(&structpb.Value{}):
		return structpb.NewValue(v)
	case reflect.TypeOf(&structpb.Struct{}):
		m, _ := v.(map[string]any)
		return structpb.NewStruct(m)
	}
	return nil, fmt.Errorf("type conversion error from %s to %v", o.name, t)
}

// ConvertToType implements ref.Val.
func (o *objectVal) ConvertToType(t ref.Type) ref.Val {
	if t == types.TypeType {
		return types.NewObjectType(o.name)
	}
	return types.NewErr("type conversion error from %s to %s", o.name, t.TypeName())
}

// Equal implements ref.Val.
func (o *objectVal) Equal(other ref.Val) ref.Val {
	p, ok := other.(*objectVal)
	if !ok || p.name != o.name || len(p.fields) != len(o.fields) {
		return types.False
	}
	for k, v := range o.fields {
		w, ok := p.fields[k]
		if !ok || v.Equal(w) != types.True {
			return types.False
		}
	}
	return types.True
}

// Type implements ref.Val.
func (o *objectVal) Type() ref.Type { return types.NewObjectType(o.name) }

// Value implements ref.Val.
func (o *objectVal) Value() any { return o.fields }

// Get implements traits.Indexer (field selection).
func (o *objectVal) Get(key ref.Val) ref.Val {
	s, ok := key.(types.String)
	if !ok {
		return types.NewErr("no such key: %v", key)
	}
	if v, ok := o.fields[string(s)]; ok {
		return v
	}
	return types.NewErr("no such field: %s", s)
}

// Receive implements traits.Receiver: Objects have no methods.
func (o *objectVal) Receive(function, overload string, args []ref.Val) ref.Val {
	return types.NoSuchOverloadErr()
}

// checkNames verifies that every Object nested in o is named by its
// field path (Object.spec{template: Object.spec.template{...}}), as
// Kubernetes checks it: the names are not otherwise type checked.
func (o *objectVal) checkNames(path string) error {
	if o.name != path {
		return fmt.Errorf("type mismatch: unexpected type name %q, expected %q, which matches the field path from the root Object type", o.name, path)
	}
	for k, v := range o.fields {
		if err := checkNestedNames(v, path+"."+k); err != nil {
			return err
		}
	}
	return nil
}

func checkNestedNames(v ref.Val, path string) error {
	switch x := v.(type) {
	case *objectVal:
		return x.checkNames(path)
	case traits.Lister:
		for it := x.Iterator(); it.HasNext() == types.True; {
			if err := checkNestedNames(it.Next(), path); err != nil {
				return err
			}
		}
	}
	return nil
}

// ApplyConfiguration returns the apply configuration an ApplyConfiguration
// mutation's expression returned, as JSON-like maps.
func ApplyConfiguration(v ref.Val) (map[string]any, error) {
	o, ok := v.(*objectVal)
	if !ok {
		return nil, fmt.Errorf("unsupported return type from ApplyConfiguration expression: %v", v.Type().TypeName())
	}
	if err := o.checkNames(ObjectTypeName); err != nil {
		return nil, err
	}
	m, err := JSONValue(o)
	if err != nil {
		return nil, err
	}
	out, _ := m.(map[string]any)
	return out, nil
}

// JSONPatchOps returns the operations a JSONPatch mutation's expression
// returned.
func JSONPatchOps(v ref.Val) ([]*JSONPatchOp, error) {
	l, ok := v.(traits.Lister)
	if !ok {
		return nil, fmt.Errorf("type mismatch: JSONPatchType.expression should evaluate to array")
	}
	var out []*JSONPatchOp
	for it := l.Iterator(); it.HasNext() == types.True; {
		e := it.Next()
		op, ok := e.(*JSONPatchOp)
		if !ok {
			return nil, fmt.Errorf("type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch, got element of %s", e.Type().TypeName())
		}
		if o, ok := op.value.(*objectVal); ok {
			// the value may be any Object.<path>: its nested objects
			// are checked against its own name
			if err := o.checkNames(o.name); err != nil {
				return nil, err
			}
		}
		out = append(out, op)
	}
	return out, nil
}

// JSONValue converts a CEL value to JSON-like Go values: maps, slices,
// strings, int64, uint64, float64, bool and nil (bytes become base64,
// timestamps RFC 3339 and durations Go duration strings, as JSON
// encodes them).
func JSONValue(v ref.Val) (any, error) {
	switch x := v.(type) {
	case types.Null:
		return nil, nil
	case types.Bool:
		return bool(x), nil
	case types.Int:
		return int64(x), nil
	case types.Uint:
		return uint64(x), nil
	case types.Double:
		return float64(x), nil
	case types.String:
		return string(x), nil
	case types.Bytes:
		return base64.StdEncoding.EncodeToString(x), nil
	case types.Timestamp:
		return x.Time.UTC().Format(time.RFC3339Nano), nil
	case types.Duration:
		return x.Duration.String(), nil
	case *types.Err:
		return nil, x
	case *objectVal:
		m := make(map[string]any, len(x.fields))
		for k, f := range x.fields {
			jv, err := JSONValue(f)
			if err != nil {
				return nil, err
			}
			m[k] = jv
		}
		return m, nil
	case traits.Mapper:
		m := map[string]any{}
		for it := x.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			ks, ok := k.(types.String)
			if !ok {
				return nil, fmt.Errorf("a map key must be a string to marshal to JSON, got %s", k.Type().TypeName())
			}
			jv, err := JSONValue(x.Get(k))
			if err != nil {
				return nil, err
			}
			m[string(ks)] = jv
		}
		return m, nil
	case traits.Lister:
		var l []any
		for it := x.Iterator(); it.HasNext() == types.True; {
			jv, err := JSONValue(it.Next())
			if err != nil {
				return nil, err
			}
			l = append(l, jv)
		}
		if l == nil {
			l = []any{}
		}
		return l, nil
	}
	pb, err := v.ConvertToNative(reflect.TypeOf(&structpb.Value{}))
	if err != nil {
		return nil, fmt.Errorf("a %s value could not marshal to JSON: %w", v.Type().TypeName(), err)
	}
	return pb.(*structpb.Value).AsInterface(), nil
}

// EscapeJSONPointerKey escapes a key for a JSON pointer (RFC 6901): ~ as
// ~0 and / as ~1. It is jsonpatch.escapeKey.
func EscapeJSONPointerKey(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// mutationLibrary is what mutation expressions add to the admission
// environment: their types and jsonpatch.escapeKey.
type mutationLibrary struct{}

func (mutationLibrary) LibraryName() string { return "kplane.admission.mutation" }

func (mutationLibrary) CompileOptions() []cel.EnvOption {
	return []cel.EnvOption{
		cel.Function("jsonpatch.escapeKey",
			cel.Overload("string_jsonpatch_escapeKey", []*cel.Type{cel.StringType}, cel.StringType,
				cel.UnaryBinding(func(v ref.Val) ref.Val {
					s, ok := v.(types.String)
					if !ok {
						return types.MaybeNoSuchOverloadErr(v)
					}
					return types.String(EscapeJSONPointerKey(string(s)))
				}))),
	}
}

func (mutationLibrary) ProgramOptions() []cel.ProgramOption { return nil }
