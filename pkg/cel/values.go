package cel

import (
	"fmt"
	"net/netip"
	"net/url"
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The CEL types of the values the Kubernetes libraries produce. The names are
// the ones Kubernetes uses, so type(x) and error messages read the same.
var (
	QuantityType = cel.ObjectType("kubernetes.Quantity")
	URLType      = cel.ObjectType("kubernetes.URL")
	FormatType   = cel.ObjectType("kubernetes.NamedFormat")
	IPType       = cel.OpaqueType("net.IP")
	CIDRType     = cel.OpaqueType("net.CIDR")
)

// convertToType implements ref.Val.ConvertToType for the types here: a value
// converts to its own type and to type.
func convertToType(v ref.Val, t ref.Type) ref.Val {
	switch t {
	case v.Type():
		return v
	case types.TypeType:
		return v.Type().(ref.Val)
	}
	return types.NewErr("type conversion error from '%s' to '%s'", v.Type().TypeName(), t.TypeName())
}

func convertToNative(v any, typeDesc reflect.Type) (any, error) {
	if reflect.TypeOf(v).AssignableTo(typeDesc) {
		return v, nil
	}
	return nil, fmt.Errorf("type conversion error from '%T' to '%v'", v, typeDesc)
}

// Quantity is a resource.Quantity as a CEL value.
type Quantity struct{ *resource.Quantity }

var _ ref.Val = Quantity{}

// ConvertToNative returns the *resource.Quantity.
func (q Quantity) ConvertToNative(t reflect.Type) (any, error) { return convertToNative(q.Quantity, t) }

// ConvertToType converts to the quantity's own type or to type.
func (q Quantity) ConvertToType(t ref.Type) ref.Val { return convertToType(q, t) }

// Type is QuantityType.
func (q Quantity) Type() ref.Type { return QuantityType }

// Value is the *resource.Quantity.
func (q Quantity) Value() any { return q.Quantity }

// Equal reports whether two quantities are numerically equal ("1" == "1000m").
func (q Quantity) Equal(other ref.Val) ref.Val {
	o, ok := other.(Quantity)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(q.Quantity.Equal(*o.Quantity))
}

// URL is a parsed URL as a CEL value.
type URL struct{ *url.URL }

var _ ref.Val = URL{}

// ConvertToNative returns the *url.URL, or its string form.
func (u URL) ConvertToNative(t reflect.Type) (any, error) {
	if reflect.TypeOf("").AssignableTo(t) {
		return u.URL.String(), nil
	}
	return convertToNative(u.URL, t)
}

// ConvertToType converts to the URL's own type or to type.
func (u URL) ConvertToType(t ref.Type) ref.Val { return convertToType(u, t) }

// Type is URLType.
func (u URL) Type() ref.Type { return URLType }

// Value is the *url.URL.
func (u URL) Value() any { return u.URL }

// Equal compares the URLs' string forms.
func (u URL) Equal(other ref.Val) ref.Val {
	o, ok := other.(URL)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(u.URL.String() == o.URL.String())
}

// IP is an IPv4 or IPv6 address (never IPv4-mapped IPv6, never with a zone).
type IP struct{ netip.Addr }

var _ ref.Val = IP{}

// ConvertToNative returns the netip.Addr.
func (ip IP) ConvertToNative(t reflect.Type) (any, error) { return convertToNative(ip.Addr, t) }

// Type is IPType.
func (ip IP) Type() ref.Type { return IPType }

// Value is the netip.Addr.
func (ip IP) Value() any { return ip.Addr }

// ConvertToType converts to string as well as to the IP's own type.
func (ip IP) ConvertToType(t ref.Type) ref.Val {
	if t == types.StringType {
		return types.String(ip.Addr.String())
	}
	return convertToType(ip, t)
}

// Equal compares addresses.
func (ip IP) Equal(other ref.Val) ref.Val {
	o, ok := other.(IP)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(ip.Addr == o.Addr)
}

// Size is the address length in bytes, used for cost.
func (ip IP) Size() ref.Val { return types.Int(ip.Addr.BitLen() / 8) }

// CIDR is an IP prefix.
type CIDR struct{ netip.Prefix }

var _ ref.Val = CIDR{}

// ConvertToNative returns the netip.Prefix.
func (c CIDR) ConvertToNative(t reflect.Type) (any, error) { return convertToNative(c.Prefix, t) }

// Type is CIDRType.
func (c CIDR) Type() ref.Type { return CIDRType }

// Value is the netip.Prefix.
func (c CIDR) Value() any { return c.Prefix }

// ConvertToType converts to string as well as to the CIDR's own type.
func (c CIDR) ConvertToType(t ref.Type) ref.Val {
	if t == types.StringType {
		return types.String(c.Prefix.String())
	}
	return convertToType(c, t)
}

// Equal compares prefixes.
func (c CIDR) Equal(other ref.Val) ref.Val {
	o, ok := other.(CIDR)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(c.Prefix == o.Prefix)
}

// Size is the address length in bytes, used for cost.
func (c CIDR) Size() ref.Val { return types.Int(c.Prefix.Addr().BitLen() / 8) }

// Format is a named string format with its validation function.
type Format struct {
	Name         string
	ValidateFunc func(string) []string
	// MaxRegexSize is the size of the regular expression (or equivalent work)
	// validating a string costs; it prices validate().
	MaxRegexSize int
}

var _ ref.Val = &Format{}

// ConvertToNative returns the *Format.
func (f *Format) ConvertToNative(t reflect.Type) (any, error) { return convertToNative(f, t) }

// ConvertToType converts to the format's own type or to type.
func (f *Format) ConvertToType(t ref.Type) ref.Val { return convertToType(f, t) }

// Type is FormatType.
func (f *Format) Type() ref.Type { return FormatType }

// Value is the *Format itself.
func (f *Format) Value() any { return f }

// Equal compares format names.
func (f *Format) Equal(other ref.Val) ref.Val {
	o, ok := other.(*Format)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(f.Name == o.Name)
}
