package registry

import (
	"net/netip"

	networkingv1 "k8s.io/api/networking/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ServiceCIDRs is networking.k8s.io/v1 servicecidrs: the ranges cluster IPs
// are allocated from, with a status subresource. Its CIDRs may not change,
// except that a single-stack range may gain a range of the other family.
func ServiceCIDRs() Strategy {
	return &Resource[*networkingv1.ServiceCIDR]{
		Meta: Info{
			GVK:      networkingv1.SchemeGroupVersion.WithKind("ServiceCIDR"),
			Resource: "servicecidrs", Singular: "servicecidr",
			Status: true,
		},
		NewFunc:        func() *networkingv1.ServiceCIDR { return &networkingv1.ServiceCIDR{} },
		NewListFunc:    func() runtime.Object { return &networkingv1.ServiceCIDRList{} },
		Spec:           func(c *networkingv1.ServiceCIDR) any { return c.Spec },
		CopyStatus:     func(dst, src *networkingv1.ServiceCIDR) { dst.Status = src.Status },
		ResetForStatus: func(c, old *networkingv1.ServiceCIDR) { c.Spec = old.Spec },
		ResetStatus:    func(c *networkingv1.ServiceCIDR) { c.Status = networkingv1.ServiceCIDRStatus{} },
		ValidateFunc: func(c *networkingv1.ServiceCIDR) field.ErrorList {
			return validateServiceCIDRSpec(c.Spec.CIDRs, field.NewPath("spec", "cidrs"))
		},
		ValidateUpdateFunc: func(c, old *networkingv1.ServiceCIDR) field.ErrorList {
			fld := field.NewPath("spec", "cidrs")
			if len(old.Spec.CIDRs) == 1 && len(c.Spec.CIDRs) == 2 && c.Spec.CIDRs[0] == old.Spec.CIDRs[0] {
				return nil // single-stack to dual-stack
			}
			return apivalidation.ValidateImmutableField(c.Spec.CIDRs, old.Spec.CIDRs, fld)
		},
	}
}

func validateServiceCIDRSpec(cidrs []string, fld *field.Path) field.ErrorList {
	if len(cidrs) == 0 {
		return field.ErrorList{field.Required(fld, "at least one CIDR required")}
	}
	if len(cidrs) > 2 {
		return field.ErrorList{field.Invalid(fld, cidrs, "may only hold up to 2 values")}
	}
	var errs field.ErrorList
	var families []bool
	for i, c := range cidrs {
		e := validation.IsValidCIDR(fld.Index(i), c)
		errs = append(errs, e...)
		if len(e) == 0 {
			p, _ := netip.ParsePrefix(c)
			families = append(families, p.Addr().Is4())
		}
	}
	if len(families) == 2 && families[0] == families[1] {
		errs = append(errs, field.Invalid(fld, cidrs, "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"))
	}
	return errs
}

// IPAddresses is networking.k8s.io/v1 ipaddresses: one allocated IP each,
// named by the address in canonical form, with an immutable reference to
// the object that holds it.
func IPAddresses() Strategy {
	return &Resource[*networkingv1.IPAddress]{
		Meta: Info{
			GVK:      networkingv1.SchemeGroupVersion.WithKind("IPAddress"),
			Resource: "ipaddresses", Singular: "ipaddress", ShortNames: []string{"ip"},
		},
		NewFunc:     func() *networkingv1.IPAddress { return &networkingv1.IPAddress{} },
		NewListFunc: func() runtime.Object { return &networkingv1.IPAddressList{} },
		NameFunc:    ipAddressName,
		ValidateFunc: func(a *networkingv1.IPAddress) field.ErrorList {
			return validateParentRef(a.Spec.ParentRef, field.NewPath("spec", "parentRef"))
		},
		ValidateUpdateFunc: func(a, old *networkingv1.IPAddress) field.ErrorList {
			return apivalidation.ValidateImmutableField(a.Spec.ParentRef, old.Spec.ParentRef, field.NewPath("spec", "parentRef"))
		},
	}
}

// ipAddressName accepts an IP address in its canonical form.
func ipAddressName(name string, prefix bool) []string {
	if prefix {
		return []string{"prefix not allowed"}
	}
	ip, err := netip.ParseAddr(name)
	switch {
	case err != nil:
		return []string{err.Error()}
	case ip.Zone() != "":
		return []string{"must not have a zone"}
	case ip.String() != name:
		return []string{"must be a canonical format IP address"}
	}
	return nil
}

func validateParentRef(ref *networkingv1.ParentReference, fld *field.Path) field.ErrorList {
	if ref == nil {
		return field.ErrorList{field.Required(fld, "")}
	}
	var errs field.ErrorList
	if ref.Group != "" {
		for _, msg := range validation.IsDNS1123Subdomain(ref.Group) {
			errs = append(errs, field.Invalid(fld.Child("group"), ref.Group, msg))
		}
	}
	if ref.Resource == "" {
		errs = append(errs, field.Required(fld.Child("resource"), ""))
	} else {
		for _, msg := range pathSegmentName(ref.Resource, false) {
			errs = append(errs, field.Invalid(fld.Child("resource"), ref.Resource, msg))
		}
	}
	if ref.Namespace != "" {
		for _, msg := range validation.IsDNS1123Label(ref.Namespace) {
			errs = append(errs, field.Invalid(fld.Child("namespace"), ref.Namespace, msg))
		}
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(fld.Child("name"), ""))
	} else {
		for _, msg := range pathSegmentName(ref.Name, false) {
			errs = append(errs, field.Invalid(fld.Child("name"), ref.Name, msg))
		}
	}
	return errs
}
