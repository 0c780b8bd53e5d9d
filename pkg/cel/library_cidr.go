package cel

import (
	"fmt"
	"net/netip"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// cidrLib: cidr(s), isCIDR(s), string(cidr), and the methods containsIP
// (an IP or a string), containsCIDR (a CIDR or a string), ip, prefixLength
// and masked.
var cidrLib = &library{name: "kubernetes.net.cidr", funcs: []cel.EnvOption{
	cel.Function("cidr", cel.Overload("string_to_cidr", []*cel.Type{cel.StringType}, CIDRType, cel.UnaryBinding(stringToCIDR))),
	cel.Function("containsIP",
		cel.MemberOverload("cidr_contains_ip_string", []*cel.Type{CIDRType, cel.StringType}, cel.BoolType,
			cel.BinaryBinding(func(c, s ref.Val) ref.Val { return cidrContainsIP(c, stringToIP(s)) })),
		cel.MemberOverload("cidr_contains_ip_ip", []*cel.Type{CIDRType, IPType}, cel.BoolType, cel.BinaryBinding(cidrContainsIP))),
	cel.Function("containsCIDR",
		cel.MemberOverload("cidr_contains_cidr_string", []*cel.Type{CIDRType, cel.StringType}, cel.BoolType,
			cel.BinaryBinding(func(c, s ref.Val) ref.Val { return cidrContainsCIDR(c, stringToCIDR(s)) })),
		cel.MemberOverload("cidr_contains_cidr", []*cel.Type{CIDRType, CIDRType}, cel.BoolType, cel.BinaryBinding(cidrContainsCIDR))),
	cel.Function("ip", cel.MemberOverload("cidr_ip", []*cel.Type{CIDRType}, IPType,
		cel.UnaryBinding(cidrFunc(func(p netip.Prefix) ref.Val { return IP{Addr: p.Addr()} })))),
	cel.Function("prefixLength", cel.MemberOverload("cidr_prefix_length", []*cel.Type{CIDRType}, cel.IntType,
		cel.UnaryBinding(cidrFunc(func(p netip.Prefix) ref.Val { return types.Int(p.Bits()) })))),
	cel.Function("masked", cel.MemberOverload("cidr_masked", []*cel.Type{CIDRType}, CIDRType,
		cel.UnaryBinding(cidrFunc(func(p netip.Prefix) ref.Val { return CIDR{Prefix: p.Masked()} })))),
	cel.Function("isCIDR", cel.Overload("is_cidr", []*cel.Type{cel.StringType}, cel.BoolType, cel.UnaryBinding(func(v ref.Val) ref.Val {
		s, ok := v.Value().(string)
		if !ok {
			return types.MaybeNoSuchOverloadErr(v)
		}
		_, err := parseCIDR(s)
		return types.Bool(err == nil)
	}))),
	cel.Function("string", cel.Overload("cidr_to_string", []*cel.Type{CIDRType}, cel.StringType,
		cel.UnaryBinding(cidrFunc(func(p netip.Prefix) ref.Val { return types.String(p.String()) })))),
}}

func cidrFunc(f func(netip.Prefix) ref.Val) func(ref.Val) ref.Val {
	return func(v ref.Val) ref.Val {
		c, ok := v.(CIDR)
		if !ok {
			return types.MaybeNoSuchOverloadErr(v)
		}
		return f(c.Prefix)
	}
}

func stringToCIDR(v ref.Val) ref.Val {
	s, ok := v.Value().(string)
	if !ok {
		return types.MaybeNoSuchOverloadErr(v)
	}
	p, err := parseCIDR(s)
	if err != nil {
		return types.NewErr("network address parse error during conversion from string: %v", err)
	}
	return CIDR{Prefix: p}
}

func parseCIDR(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("network address parse error during conversion from string: %v", err)
	}
	if p.Addr().Is4In6() {
		return netip.Prefix{}, fmt.Errorf("IPv4-mapped IPv6 address %q is not allowed", s)
	}
	return p, nil
}

func cidrContainsIP(cv, iv ref.Val) ref.Val {
	c, ok := cv.(CIDR)
	if !ok {
		return types.MaybeNoSuchOverloadErr(cv)
	}
	ip, ok := iv.(IP)
	if !ok {
		return types.MaybeNoSuchOverloadErr(iv)
	}
	return types.Bool(c.Contains(ip.Addr))
}

func cidrContainsCIDR(cv, ov ref.Val) ref.Val {
	c, ok := cv.(CIDR)
	if !ok {
		return types.MaybeNoSuchOverloadErr(cv)
	}
	o, ok := ov.(CIDR)
	if !ok {
		return types.MaybeNoSuchOverloadErr(ov)
	}
	return types.Bool(c.Overlaps(o.Prefix) && c.Bits() <= o.Bits())
}
