package cel

import (
	"math"

	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
)

// CostEstimator prices the Kubernetes library functions, statically (as a
// checker.CostEstimator, from the size estimates of the arguments) and at run
// time (as an interpreter.ActualCostEstimator, from the actual arguments), the
// way Kubernetes does, so that the same expressions fit the same budgets.
// Functions it does not know are left to cel-go's defaults.
// It is safe for concurrent use when SizeEstimator is.
type CostEstimator struct {
	// SizeEstimator, if set, bounds the sizes of variables (such as a
	// DeclType's size estimates); nil means sizes are unknown, hence unbounded.
	SizeEstimator checker.CostEstimator
}

var (
	_ checker.CostEstimator           = (*CostEstimator)(nil)
	_ interpreter.ActualCostEstimator = (*CostEstimator)(nil)
)

func unitCost() *uint64 {
	c := uint64(1)
	return &c
}

func strCost(size uint64, factor float64) *uint64 {
	c := uint64(math.Ceil(float64(size) * factor))
	return &c
}

// CallCost returns the runtime cost of a call, or nil for cel-go's default.
func (e *CostEstimator) CallCost(function, overloadID string, args []ref.Val, result ref.Val) *uint64 {
	switch function {
	case "isSorted", "sum", "max", "min", "indexOf", "lastIndexOf":
		var c uint64
		if len(args) > 0 {
			c = traversalCost(args[0])
		}
		return &c
	case "url", "lowerAscii", "upperAscii", "substring", "trim", "cidr", "isIP", "isCIDR", "quantity", "isQuantity", "semver", "isSemver":
		if len(args) >= 1 {
			return strCost(actualSize(args[0]), common.StringTraversalCostFactor)
		}
	case "replace", "split":
		if len(args) >= 1 {
			return strCost(actualSize(args[0]), 2*common.StringTraversalCostFactor)
		}
	case "join":
		if len(args) >= 1 {
			return strCost(actualSize(result), 2*common.StringTraversalCostFactor)
		}
	case "find", "findAll":
		if len(args) >= 2 {
			s := uint64(math.Ceil((1 + float64(actualSize(args[0]))) * common.StringTraversalCostFactor))
			re := uint64(math.Ceil(float64(actualSize(args[1])) * common.RegexStringLengthCostFactor))
			c := s * re
			return &c
		}
	case "ip":
		if overloadID == "cidr_ip" {
			return unitCost()
		}
		if len(args) >= 1 {
			return strCost(actualSize(args[0]), common.StringTraversalCostFactor)
		}
	case "ip.isCanonical":
		if len(args) >= 1 {
			return strCost(actualSize(args[0]), 2*common.StringTraversalCostFactor)
		}
	case "containsIP", "containsCIDR":
		if len(args) >= 2 {
			cidr, other := actualSize(args[0]), actualSize(args[1])
			c := uint64(math.Ceil(float64(2*cidr) * common.StringTraversalCostFactor))
			if function == "containsCIDR" {
				c += uint64(math.Ceil(float64(cidr)*common.StringTraversalCostFactor)) + 1
			}
			if overloadID == "cidr_contains_ip_string" || overloadID == "cidr_contains_cidr_string" {
				c += uint64(math.Ceil(float64(other) * common.StringTraversalCostFactor))
			}
			return &c
		}
	case "validate":
		if len(args) >= 2 {
			if f, ok := args[0].(*Format); ok {
				s := uint64(math.Ceil((1 + float64(actualSize(args[1]))) * common.StringTraversalCostFactor))
				re := uint64(math.Ceil(float64(f.MaxRegexSize) * common.RegexStringLengthCostFactor))
				c := s * re
				return &c
			}
		}
	case "format.named", "masked", "prefixLength", "family", "isUnspecified", "isLoopback", "isLinkLocalMulticast",
		"isLinkLocalUnicast", "isGlobalUnicast", "sign", "asInteger", "isInteger", "asApproximateFloat", "isGreaterThan",
		"isLessThan", "compareTo", "add", "sub", "major", "minor", "patch", "getScheme", "getHostname", "getHost", "getPort", "getEscapedPath", "getQuery":
		return unitCost()
	case "_==_":
		if len(args) == 2 {
			switch args[0].(type) {
			case Quantity, IP, CIDR, *Format, URL, Semver:
				return unitCost()
			}
		}
	}
	return nil
}

// EstimateCallCost returns the static cost of a call, or nil for cel-go's default.
func (e *CostEstimator) EstimateCallCost(function, overloadID string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	unit := &checker.CallEstimate{CostEstimate: checker.CostEstimate{Min: 1, Max: 1}}
	switch function {
	case "isSorted", "sum", "max", "min", "indexOf", "lastIndexOf":
		if target == nil {
			return nil
		}
		el := e.listElementNode(*target)
		if el == nil {
			return &checker.CallEstimate{CostEstimate: e.sizeEstimate(*target).MultiplyByCostFactor(common.StringTraversalCostFactor)}
		}
		elCost := checker.CostEstimate{Min: 1, Max: 1}
		if k := el.Type().Kind(); k == types.StringKind || k == types.BytesKind {
			elCost = elCost.Add(e.sizeEstimate(el).MultiplyByCostFactor(common.StringTraversalCostFactor))
		}
		return &checker.CallEstimate{CostEstimate: e.sizeEstimate(*target).MultiplyByCost(elCost)}
	case "url":
		if len(args) == 1 {
			sz := e.sizeEstimate(args[0])
			return &checker.CallEstimate{CostEstimate: sz.MultiplyByCostFactor(common.StringTraversalCostFactor), ResultSize: &sz}
		}
	case "lowerAscii", "upperAscii", "substring", "trim":
		if target != nil {
			sz := e.sizeEstimate(*target)
			return &checker.CallEstimate{CostEstimate: sz.MultiplyByCostFactor(common.StringTraversalCostFactor), ResultSize: &sz}
		}
	case "replace":
		if target != nil && len(args) >= 2 {
			return e.replaceEstimate(*target, args[0], args[1])
		}
	case "split":
		if target != nil {
			sz := e.sizeEstimate(*target)
			limit := sz.Max
			if len(args) > 1 {
				if lit := args[1].Expr().AsLiteral(); lit != nil {
					if n, ok := lit.Value().(int64); ok {
						limit = uint64(n)
					}
				}
			}
			return &checker.CallEstimate{CostEstimate: sz.MultiplyByCostFactor(2 * common.StringTraversalCostFactor), ResultSize: &checker.SizeEstimate{Min: 0, Max: limit}}
		}
	case "join":
		if target != nil {
			var sz checker.SizeEstimate
			n := e.sizeEstimate(*target)
			if el := e.listElementNode(*target); el != nil {
				sz = n.Multiply(e.sizeEstimate(el))
			}
			if len(args) > 0 {
				var seps checker.SizeEstimate
				if n.Min > 0 {
					seps.Min = n.Min - 1
				}
				if n.Max > 0 {
					seps.Max = n.Max - 1
				}
				sz = sz.Add(e.sizeEstimate(args[0]).Multiply(seps))
			}
			return &checker.CallEstimate{CostEstimate: sz.MultiplyByCostFactor(common.StringTraversalCostFactor), ResultSize: &sz}
		}
	case "find", "findAll":
		if target != nil && len(args) >= 1 {
			sz := e.sizeEstimate(*target)
			s := sz.Add(checker.SizeEstimate{Min: 1, Max: 1}).MultiplyByCostFactor(common.StringTraversalCostFactor)
			re := e.sizeEstimate(args[0]).MultiplyByCostFactor(common.RegexStringLengthCostFactor)
			return &checker.CallEstimate{CostEstimate: s.Multiply(re), ResultSize: &checker.SizeEstimate{Min: 0, Max: sz.Max}}
		}
	case "cidr", "isIP", "isCIDR", "quantity", "isQuantity", "semver", "isSemver":
		if len(args) >= 1 {
			return &checker.CallEstimate{CostEstimate: e.sizeEstimate(args[0]).MultiplyByCostFactor(common.StringTraversalCostFactor)}
		}
	case "ip":
		if overloadID == "cidr_ip" {
			return unit
		}
		if len(args) >= 1 {
			return &checker.CallEstimate{CostEstimate: e.sizeEstimate(args[0]).MultiplyByCostFactor(common.StringTraversalCostFactor)}
		}
	case "ip.isCanonical":
		if len(args) >= 1 {
			return &checker.CallEstimate{CostEstimate: e.sizeEstimate(args[0]).MultiplyByCostFactor(2 * common.StringTraversalCostFactor)}
		}
	case "containsIP", "containsCIDR":
		if len(args) >= 1 {
			ipSize := checker.SizeEstimate{Min: 4, Max: 16}
			c := ipSize.Add(ipSize).MultiplyByCostFactor(common.StringTraversalCostFactor)
			if function == "containsCIDR" {
				c = c.Add(ipSize.MultiplyByCostFactor(common.StringTraversalCostFactor)).Add(checker.CostEstimate{Min: 1, Max: 1})
			}
			if overloadID == "cidr_contains_ip_string" || overloadID == "cidr_contains_cidr_string" {
				c = c.Add(checker.CostEstimate(e.sizeEstimate(args[0])).MultiplyByCostFactor(common.StringTraversalCostFactor))
			}
			return &checker.CallEstimate{CostEstimate: c}
		}
	case "validate":
		if len(args) >= 1 {
			sz := e.sizeEstimate(args[0])
			return &checker.CallEstimate{CostEstimate: sz.MultiplyByCostFactor(common.StringTraversalCostFactor).
				MultiplyByCostFactor(maxNameFormatRegexSize * common.RegexStringLengthCostFactor)}
		}
	case "format.named", "masked", "prefixLength", "family", "isUnspecified", "isLoopback", "isLinkLocalMulticast",
		"isLinkLocalUnicast", "isGlobalUnicast", "sign", "asInteger", "isInteger", "asApproximateFloat", "isGreaterThan",
		"isLessThan", "compareTo", "add", "sub", "major", "minor", "patch", "getScheme", "getHostname", "getHost", "getPort", "getEscapedPath", "getQuery":
		return unit
	case "_==_":
		if len(args) == 2 && args[0].Type().IsExactType(args[1].Type()) {
			switch t := args[0].Type(); {
			case t.IsExactType(IPType), t.IsExactType(CIDRType), t.IsExactType(QuantityType), t.IsExactType(SemverType):
				return unit
			case t.IsExactType(FormatType):
				// formats have short names
				return &checker.CallEstimate{CostEstimate: checker.CostEstimate{Min: 1, Max: 64}.MultiplyByCostFactor(common.StringTraversalCostFactor)}
			case t.IsExactType(URLType):
				// Kubernetes bounds URL equality by the right-hand side's
				// size alone; kept so that estimates agree.
				size := checker.SizeEstimate{Min: 1, Max: 1}
				if r := args[1].ComputedSize(); r != nil {
					size = r.Union(*r)
				}
				return &checker.CallEstimate{CostEstimate: checker.CostEstimate{Min: 1, Max: size.Max}.MultiplyByCostFactor(common.StringTraversalCostFactor)}
			}
		}
	}
	return nil
}

// replaceEstimate bounds s.replace(old, new): the result can grow by
// len(new) each time old occurs.
func (e *CostEstimator) replaceEstimate(target, oldArg, newArg checker.AstNode) *checker.CallEstimate {
	sz := e.sizeEstimate(target)
	oldSz := e.sizeEstimate(oldArg)
	newSz := e.sizeEstimate(newArg)
	var count, kept checker.SizeEstimate
	switch {
	case oldSz.Min == 0: // replacing "" inserts between every character
		count.Max = sz.Max
		if sz.Max < math.MaxUint64 {
			count.Max++
		}
		kept.Max = sz.Max
	case newSz.Max <= oldSz.Min: // cannot grow
		kept.Max = sz.Max
	default:
		count.Max = uint64(math.Ceil(float64(sz.Max) / float64(oldSz.Min)))
	}
	switch {
	case oldSz.Max == 0:
		count.Min = sz.Min
		if sz.Min < math.MaxUint64 {
			count.Min++
		}
		kept.Min = sz.Min
	case oldSz.Max <= newSz.Min:
		kept.Min = sz.Min
	default:
		count.Min = uint64(math.Ceil(float64(sz.Min) / float64(oldSz.Max)))
	}
	size := count.Multiply(newSz).Add(kept)
	return &checker.CallEstimate{CostEstimate: sz.MultiplyByCostFactor(2 * common.StringTraversalCostFactor), ResultSize: &size}
}

// EstimateSize delegates to SizeEstimator.
func (e *CostEstimator) EstimateSize(element checker.AstNode) *checker.SizeEstimate {
	if e.SizeEstimator != nil {
		return e.SizeEstimator.EstimateSize(element)
	}
	return nil
}

func (e *CostEstimator) sizeEstimate(n checker.AstNode) checker.SizeEstimate {
	if sz := n.ComputedSize(); sz != nil {
		return *sz
	}
	if sz := e.EstimateSize(n); sz != nil {
		return *sz
	}
	return checker.SizeEstimate{Min: 0, Max: math.MaxUint64}
}

// listElementNode is a synthetic node for the elements of a list, so that
// their sizes can be looked up by path (path + "@items").
func (e *CostEstimator) listElementNode(list checker.AstNode) checker.AstNode {
	params := list.Type().Parameters()
	if len(params) == 0 {
		return nil
	}
	var path []string
	if p := list.Path(); p != nil {
		path = append(append(make([]string, 0, len(p)+1), p...), "@items")
	}
	return &elementNode{path: path, t: params[0]}
}

type elementNode struct {
	path []string
	t    *types.Type
}

func (n *elementNode) Path() []string                      { return n.path }
func (n *elementNode) Type() *types.Type                   { return n.t }
func (n *elementNode) Expr() ast.Expr                      { return nil }
func (n *elementNode) ComputedSize() *checker.SizeEstimate { return nil }

func actualSize(v ref.Val) uint64 {
	if s, ok := v.(traits.Sizer); ok {
		if n, ok := s.Size().(types.Int); ok {
			return uint64(n)
		}
	}
	return 1
}

// traversalCost is the cost of visiting every part of v once.
func traversalCost(v ref.Val) uint64 {
	switch v := v.(type) {
	case types.String:
		return uint64(float64(len(v)) * common.StringTraversalCostFactor)
	case types.Bytes:
		return uint64(float64(len(v)) * common.StringTraversalCostFactor)
	case traits.Lister:
		var c uint64
		for it := v.Iterator(); it.HasNext() == types.True; {
			c += traversalCost(it.Next())
		}
		return c
	case traits.Mapper:
		var c uint64
		for it := v.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			c += traversalCost(k) + traversalCost(v.Get(k))
		}
		return c
	}
	return 1
}
