package cel

import (
	"fmt"
	"net/netip"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// ipLib: ip(s), isIP(s), ip.isCanonical(s), string(ip), and the methods
// family, isUnspecified, isLoopback, isLinkLocalMulticast, isLinkLocalUnicast
// and isGlobalUnicast. Zones and IPv4-mapped IPv6 addresses are rejected.
var ipLib = &library{name: "kubernetes.net.ip", funcs: []cel.EnvOption{
	cel.Function("ip", cel.Overload("string_to_ip", []*cel.Type{cel.StringType}, IPType, cel.UnaryBinding(stringToIP))),
	cel.Function("family", cel.MemberOverload("ip_family", []*cel.Type{IPType}, cel.IntType, cel.UnaryBinding(ipFunc(func(a netip.Addr) ref.Val {
		switch {
		case a.Is4():
			return types.Int(4)
		case a.Is6():
			return types.Int(6)
		}
		return types.NewErr("IP address %q is not an IPv4 or IPv6 address", a.String())
	})))),
	cel.Function("ip.isCanonical", cel.Overload("ip_is_canonical", []*cel.Type{cel.StringType}, cel.BoolType, cel.UnaryBinding(func(v ref.Val) ref.Val {
		s, ok := v.Value().(string)
		if !ok {
			return types.MaybeNoSuchOverloadErr(v)
		}
		a, err := parseIP(s)
		if err != nil {
			return types.NewErr("%v", err)
		}
		return types.Bool(a.String() == s)
	}))),
	ipPredicate("isUnspecified", "ip_is_unspecified", netip.Addr.IsUnspecified),
	ipPredicate("isLoopback", "ip_is_loopback", netip.Addr.IsLoopback),
	ipPredicate("isLinkLocalMulticast", "ip_is_link_local_multicast", netip.Addr.IsLinkLocalMulticast),
	ipPredicate("isLinkLocalUnicast", "ip_is_link_local_unicast", netip.Addr.IsLinkLocalUnicast),
	ipPredicate("isGlobalUnicast", "ip_is_global_unicast", netip.Addr.IsGlobalUnicast),
	cel.Function("isIP", cel.Overload("is_ip", []*cel.Type{cel.StringType}, cel.BoolType, cel.UnaryBinding(func(v ref.Val) ref.Val {
		s, ok := v.Value().(string)
		if !ok {
			return types.MaybeNoSuchOverloadErr(v)
		}
		_, err := parseIP(s)
		return types.Bool(err == nil)
	}))),
	cel.Function("string", cel.Overload("ip_to_string", []*cel.Type{IPType}, cel.StringType,
		cel.UnaryBinding(ipFunc(func(a netip.Addr) ref.Val { return types.String(a.String()) })))),
}}

func ipFunc(f func(netip.Addr) ref.Val) func(ref.Val) ref.Val {
	return func(v ref.Val) ref.Val {
		ip, ok := v.(IP)
		if !ok {
			return types.MaybeNoSuchOverloadErr(v)
		}
		return f(ip.Addr)
	}
}

func ipPredicate(name, overload string, pred func(netip.Addr) bool) cel.EnvOption {
	return cel.Function(name, cel.MemberOverload(overload, []*cel.Type{IPType}, cel.BoolType,
		cel.UnaryBinding(ipFunc(func(a netip.Addr) ref.Val { return types.Bool(pred(a)) }))))
}

func stringToIP(v ref.Val) ref.Val {
	s, ok := v.Value().(string)
	if !ok {
		return types.MaybeNoSuchOverloadErr(v)
	}
	a, err := parseIP(s)
	if err != nil {
		return types.NewErr("%v", err)
	}
	return IP{Addr: a}
}

func parseIP(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("IP Address %q parse error during conversion from string: %v", s, err)
	}
	if a.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("IP address %q with zone value is not allowed", s)
	}
	if a.Is4In6() {
		return netip.Addr{}, fmt.Errorf("IPv4-mapped IPv6 address %q is not allowed", s)
	}
	return a, nil
}
