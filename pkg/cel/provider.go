package cel

import (
	"maps"
	"slices"

	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// TypeProvider makes the object types of DeclTypes known to CEL and
// delegates everything else to a base provider. It is immutable and safe for
// concurrent use.
type TypeProvider struct {
	base    types.Provider
	objects map[string]*DeclType
}

var _ types.Provider = (*TypeProvider)(nil)

// NewTypeProvider returns a provider for the object types reachable from
// roots, falling back to base (typically the CELTypeProvider of the
// environment being extended).
func NewTypeProvider(base types.Provider, roots ...*DeclType) *TypeProvider {
	p := &TypeProvider{base: base, objects: map[string]*DeclType{}}
	for _, r := range roots {
		p.collect(r)
	}
	return p
}

func (p *TypeProvider) collect(t *DeclType) {
	if t == nil {
		return
	}
	if t.kind == kindObject {
		p.objects[t.Name] = t
		for _, f := range t.Fields {
			p.collect(f.Type)
		}
	}
	p.collect(t.ElemType)
}

// EnumValue delegates to the base provider.
func (p *TypeProvider) EnumValue(name string) ref.Val { return p.base.EnumValue(name) }

// FindIdent delegates to the base provider.
func (p *TypeProvider) FindIdent(name string) (ref.Val, bool) { return p.base.FindIdent(name) }

// FindStructType returns the type of a named object type.
func (p *TypeProvider) FindStructType(name string) (*types.Type, bool) {
	if t, ok := p.objects[name]; ok {
		return types.NewTypeTypeWithParam(t.celType), true
	}
	return p.base.FindStructType(name)
}

// FindStructFieldNames returns an object type's exposed fields, sorted.
func (p *TypeProvider) FindStructFieldNames(name string) ([]string, bool) {
	if t, ok := p.objects[name]; ok {
		return slices.Sorted(maps.Keys(t.Fields)), true
	}
	return p.base.FindStructFieldNames(name)
}

// FindStructFieldType returns the type of an object type's field. Values of
// object types are CEL maps, so fields are read as map entries.
func (p *TypeProvider) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	if t, ok := p.objects[name]; ok {
		f, ok := t.Fields[field]
		if !ok && celReserved[field] {
			// since Kubernetes 1.31, reserved words are also accepted
			// unescaped as field names (self.metadata.namespace)
			f, ok = t.Fields["__"+field+"__"]
		}
		if !ok {
			return nil, false
		}
		return &types.FieldType{Type: f.Type.celType}, true
	}
	return p.base.FindStructFieldType(name, field)
}

// NewValue refuses to construct object types: expressions read objects,
// they do not build them.
func (p *TypeProvider) NewValue(name string, fields map[string]ref.Val) ref.Val {
	if _, ok := p.objects[name]; ok {
		return types.NewErr("cannot construct values of type %s", name)
	}
	return p.base.NewValue(name, fields)
}

// SizeEstimator bounds the sizes of variables of declared types, for static
// cost estimation: a variable named in Vars has the sizes of its DeclType,
// down the paths the checker reports (fields, @items, @keys, @values).
type SizeEstimator struct {
	Vars map[string]*DeclType
	// Default, if set, bounds every other identifier. Kubernetes bounds all
	// identifiers of a rule (type names such as int included) by the rule's
	// root type; setting Default to it keeps estimates, and so which rules
	// fit the budget, the same.
	Default *DeclType
}

var _ checker.CostEstimator = SizeEstimator{}

// EstimateSize returns the size bound of an expression node, or nil if unknown.
func (e SizeEstimator) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	path := n.Path()
	if len(path) == 0 {
		return nil
	}
	t, ok := e.Vars[path[0]]
	if !ok {
		t = e.Default
	}
	for _, step := range path[1:] {
		if t == nil {
			return nil
		}
		switch step {
		case "@items", "@values":
			t = t.ElemType
		case "@keys":
			if t.kind != kindMap {
				return nil
			}
			// Kubernetes bounds map keys by a string type without a
			// maximum, which estimates as zero; kept for equal estimates.
			t = &DeclType{}
		default:
			f, ok := t.Fields[step]
			if !ok {
				return nil
			}
			t = f.Type
		}
	}
	if t == nil {
		return nil
	}
	return &checker.SizeEstimate{Min: 0, Max: uint64(t.MaxElements)}
}

// EstimateCallCost leaves calls to the other estimators.
func (SizeEstimator) EstimateCallCost(function, overloadID string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	return nil
}
