//lint:file-ignore SA1019 core/v1 Endpoints is deprecated but served, as kube-apiserver 1.37 still serves it
package registry

import (
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The caps Kubernetes puts on an EndpointSlice.
const (
	maxSliceEndpoints = 1000
	maxSliceAddresses = 100
	maxSlicePorts     = 20000
)

var sliceAddressTypes = sets.New(discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeFQDN)

// Endpoints is core/v1 endpoints: the addresses and ports behind a Service.
// As in Kubernetes 1.33+, every request gets a warning that the API is
// deprecated in favour of EndpointSlices.
func Endpoints() Strategy {
	return &endpointsStrategy{Resource[*corev1.Endpoints]{
		Meta: Info{
			GVK:      corev1.SchemeGroupVersion.WithKind("Endpoints"),
			Resource: "endpoints", Singular: "endpoints", ShortNames: []string{"ep"},
			Namespaced: true,
		},
		NewFunc:     func() *corev1.Endpoints { return &corev1.Endpoints{} },
		NewListFunc: func() runtime.Object { return &corev1.EndpointsList{} },
		Defaults: func(e *corev1.Endpoints) {
			for i := range e.Subsets {
				for j := range e.Subsets[i].Ports {
					if e.Subsets[i].Ports[j].Protocol == "" {
						e.Subsets[i].Ports[j].Protocol = corev1.ProtocolTCP
					}
				}
			}
		},
		ValidateFunc: validateEndpoints,
	}}
}

// endpointsStrategy is the Endpoints Resource, deprecated.
type endpointsStrategy struct {
	Resource[*corev1.Endpoints]
}

var _ Deprecated = (*endpointsStrategy)(nil)

// DeprecationWarning implements Deprecated.
func (*endpointsStrategy) DeprecationWarning() string {
	return "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"
}

func validateEndpoints(e *corev1.Endpoints) field.ErrorList {
	var errs field.ErrorList
	subsets := field.NewPath("subsets")
	for i, ss := range e.Subsets {
		idx := subsets.Index(i)
		if len(ss.Addresses) == 0 && len(ss.NotReadyAddresses) == 0 {
			errs = append(errs, field.Required(idx, "must specify `addresses` or `notReadyAddresses`"))
		}
		for j := range ss.Addresses {
			errs = append(errs, validateEndpointAddress(&ss.Addresses[j], idx.Child("addresses").Index(j))...)
		}
		for j := range ss.NotReadyAddresses {
			errs = append(errs, validateEndpointAddress(&ss.NotReadyAddresses[j], idx.Child("notReadyAddresses").Index(j))...)
		}
		names := sets.New[string]()
		for j, p := range ss.Ports {
			fld := idx.Child("ports").Index(j)
			if len(ss.Ports) > 1 && p.Name == "" {
				errs = append(errs, field.Required(fld.Child("name"), ""))
			} else if p.Name != "" {
				for _, msg := range validation.IsDNS1123Label(p.Name) {
					errs = append(errs, field.Invalid(fld.Child("name"), p.Name, msg))
				}
				if names.Has(p.Name) {
					errs = append(errs, field.Duplicate(fld.Child("name"), p.Name))
				}
				names.Insert(p.Name)
			}
			for _, msg := range validation.IsValidPortNum(int(p.Port)) {
				errs = append(errs, field.Invalid(fld.Child("port"), p.Port, msg))
			}
			errs = append(errs, validateProtocol(p.Protocol, fld.Child("protocol"))...)
			if p.AppProtocol != nil {
				for _, msg := range validation.IsQualifiedName(*p.AppProtocol) {
					errs = append(errs, field.Invalid(fld.Child("appProtocol"), *p.AppProtocol, msg))
				}
			}
		}
	}
	return errs
}

func validateProtocol(p corev1.Protocol, fld *field.Path) field.ErrorList {
	if p == "" {
		return field.ErrorList{field.Required(fld, "")}
	}
	if !portProtocols.Has(p) {
		return field.ErrorList{field.NotSupported(fld, p, sets.List(portProtocols))}
	}
	return nil
}

func validateEndpointAddress(a *corev1.EndpointAddress, fld *field.Path) field.ErrorList {
	errs := validation.IsValidIP(fld.Child("ip"), a.IP)
	if len(errs) == 0 {
		errs = append(errs, validateNonSpecialIP(a.IP, fld.Child("ip"))...)
	}
	if a.Hostname != "" {
		for _, msg := range validation.IsDNS1123Label(a.Hostname) {
			errs = append(errs, field.Invalid(fld.Child("hostname"), a.Hostname, msg))
		}
	}
	if a.NodeName != nil {
		for _, msg := range apivalidation.NameIsDNSSubdomain(*a.NodeName, false) {
			errs = append(errs, field.Invalid(fld.Child("nodeName"), *a.NodeName, msg))
		}
	}
	return errs
}

// validateNonSpecialIP refuses the addresses an endpoint may not have:
// they would make a proxy route to itself or nowhere.
func validateNonSpecialIP(ip string, fld *field.Path) field.ErrorList {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return nil
	}
	switch {
	case addr.IsUnspecified():
		return field.ErrorList{field.Invalid(fld, ip, "may not be unspecified (0.0.0.0)")}
	case addr.IsLoopback():
		return field.ErrorList{field.Invalid(fld, ip, "may not be in the loopback range (127.0.0.0/8, ::1/128)")}
	case addr.IsLinkLocalUnicast():
		return field.ErrorList{field.Invalid(fld, ip, "may not be in the link-local range (169.254.0.0/16, fe80::/10)")}
	case addr.IsLinkLocalMulticast():
		return field.ErrorList{field.Invalid(fld, ip, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)")}
	}
	return nil
}

// EndpointSlices is discovery.k8s.io/v1 endpointslices, with an immutable
// addressType.
func EndpointSlices() Strategy {
	return &Resource[*discoveryv1.EndpointSlice]{
		Meta: Info{
			GVK:      discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"),
			Resource: "endpointslices", Singular: "endpointslice",
			Namespaced: true,
		},
		NewFunc:     func() *discoveryv1.EndpointSlice { return &discoveryv1.EndpointSlice{} },
		NewListFunc: func() runtime.Object { return &discoveryv1.EndpointSliceList{} },
		Spec: func(s *discoveryv1.EndpointSlice) any {
			return []any{s.AddressType, s.Endpoints, s.Ports}
		},
		Defaults: func(s *discoveryv1.EndpointSlice) {
			for i := range s.Ports {
				if s.Ports[i].Protocol == nil {
					s.Ports[i].Protocol = ptr(corev1.ProtocolTCP)
				}
			}
		},
		ValidateFunc: validateEndpointSlice,
		ValidateUpdateFunc: func(s, old *discoveryv1.EndpointSlice) field.ErrorList {
			return apivalidation.ValidateImmutableField(s.AddressType, old.AddressType, field.NewPath("addressType"))
		},
	}
}

func validateEndpointSlice(s *discoveryv1.EndpointSlice) field.ErrorList {
	var errs field.ErrorList
	at := field.NewPath("addressType")
	if s.AddressType == "" {
		errs = append(errs, field.Required(at, ""))
	} else if !sliceAddressTypes.Has(s.AddressType) {
		errs = append(errs, field.NotSupported(at, s.AddressType, sets.List(sliceAddressTypes)))
	}
	eps := field.NewPath("endpoints")
	if len(s.Endpoints) > maxSliceEndpoints {
		errs = append(errs, field.TooMany(eps, len(s.Endpoints), maxSliceEndpoints))
	}
	for i, ep := range s.Endpoints {
		idx := eps.Index(i)
		addrs := idx.Child("addresses")
		if len(ep.Addresses) == 0 {
			errs = append(errs, field.Required(addrs, "must contain at least 1 address"))
		} else if len(ep.Addresses) > maxSliceAddresses {
			errs = append(errs, field.TooMany(addrs, len(ep.Addresses), maxSliceAddresses))
		}
		for j, a := range ep.Addresses {
			fld := addrs.Index(j)
			switch s.AddressType {
			case discoveryv1.AddressTypeIPv4:
				errs = append(errs, validateIPOfFamily(fld, a, true)...)
			case discoveryv1.AddressTypeIPv6:
				errs = append(errs, validateIPOfFamily(fld, a, false)...)
			case discoveryv1.AddressTypeFQDN:
				errs = append(errs, validation.IsFullyQualifiedDomainName(fld, a)...)
			}
		}
		if ep.Hostname != nil {
			for _, msg := range validation.IsDNS1123Label(*ep.Hostname) {
				errs = append(errs, field.Invalid(idx.Child("hostname"), *ep.Hostname, msg))
			}
		}
		if ep.NodeName != nil {
			for _, msg := range apivalidation.NameIsDNSSubdomain(*ep.NodeName, false) {
				errs = append(errs, field.Invalid(idx.Child("nodeName"), *ep.NodeName, msg))
			}
		}
		if ep.DeprecatedTopology != nil {
			errs = append(errs, field.Forbidden(idx.Child("deprecatedTopology"), "may not be set in v1"))
		}
	}
	ports := field.NewPath("ports")
	if len(s.Ports) > maxSlicePorts {
		errs = append(errs, field.TooMany(ports, len(s.Ports), maxSlicePorts))
	}
	names := sets.New[string]()
	for i, p := range s.Ports {
		idx := ports.Index(i)
		name := ""
		if p.Name != nil {
			name = *p.Name
		}
		if name != "" {
			for _, msg := range validation.IsDNS1123Label(name) {
				errs = append(errs, field.Invalid(idx.Child("name"), name, msg))
			}
		}
		if names.Has(name) {
			errs = append(errs, field.Duplicate(idx.Child("name"), name))
		}
		names.Insert(name)
		if p.Protocol == nil {
			errs = append(errs, field.Required(idx.Child("protocol"), ""))
		} else {
			errs = append(errs, validateProtocol(*p.Protocol, idx.Child("protocol"))...)
		}
		if p.Port != nil {
			for _, msg := range validation.IsValidPortNum(int(*p.Port)) {
				errs = append(errs, field.Invalid(idx.Child("port"), *p.Port, msg))
			}
		}
		if p.AppProtocol != nil {
			for _, msg := range validation.IsQualifiedName(*p.AppProtocol) {
				errs = append(errs, field.Invalid(idx.Child("appProtocol"), *p.AppProtocol, msg))
			}
		}
	}
	return errs
}

// validateIPOfFamily checks an address of an IPv4 (v4) or IPv6 slice.
func validateIPOfFamily(fld *field.Path, value string, v4 bool) field.ErrorList {
	if errs := validation.IsValidIP(fld, value); len(errs) > 0 {
		return errs
	}
	addr, _ := netip.ParseAddr(value)
	if v4 && !addr.Is4() {
		return field.ErrorList{field.Invalid(fld, value, "must be an IPv4 address")}
	}
	if !v4 && !addr.Is6() {
		return field.ErrorList{field.Invalid(fld, value, "must be an IPv6 address")}
	}
	return nil
}
