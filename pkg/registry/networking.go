package registry

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// ingressClassAnnotation is the annotation that named an Ingress' class
// before spec.ingressClassName.
const ingressClassAnnotation = "kubernetes.io/ingress.class"

// Ingresses is networking.k8s.io/v1 ingresses: rules of hosts and paths
// to backends, a status subresource with the load balancer's addresses.
func Ingresses() Strategy {
	return &Resource[*networkingv1.Ingress]{
		Meta: Info{
			GVK:      networkingv1.SchemeGroupVersion.WithKind("Ingress"),
			Resource: "ingresses", Singular: "ingress", ShortNames: []string{"ing"},
			Namespaced: true, Status: true,
		},
		NewFunc:        func() *networkingv1.Ingress { return &networkingv1.Ingress{} },
		NewListFunc:    func() runtime.Object { return &networkingv1.IngressList{} },
		Spec:           func(i *networkingv1.Ingress) any { return i.Spec },
		CopyStatus:     func(dst, src *networkingv1.Ingress) { dst.Status = src.Status },
		ResetForStatus: func(i, old *networkingv1.Ingress) { i.Spec = old.Spec },
		ResetStatus:    func(i *networkingv1.Ingress) { i.Status = networkingv1.IngressStatus{} },
		ValidateFunc:   validateIngress,
		// The status only changes through the status subresource; checking
		// it on every update checks those writes.
		ValidateUpdateFunc: validateIngressStatus,
	}
}

// validateIngressStatus checks the load balancer's addresses: IPs (an
// address already stored is let be) and DNS names that are not IPs.
func validateIngressStatus(ing, old *networkingv1.Ingress) field.ErrorList {
	var oldIPs []string
	for _, lb := range old.Status.LoadBalancer.Ingress {
		if lb.IP != "" {
			oldIPs = append(oldIPs, lb.IP)
		}
	}
	fld := field.NewPath("status", "loadBalancer", "ingress")
	var errs field.ErrorList
	for i, lb := range ing.Status.LoadBalancer.Ingress {
		if lb.IP != "" {
			errs = append(errs, validation.IsValidIPForLegacyField(fld.Index(i).Child("ip"), lb.IP, false, oldIPs)...)
		}
		if lb.Hostname != "" {
			for _, msg := range validation.IsDNS1123Subdomain(lb.Hostname) {
				errs = append(errs, field.Invalid(fld.Index(i).Child("hostname"), lb.Hostname, msg))
			}
			if netutils.ParseIPSloppy(lb.Hostname) != nil {
				errs = append(errs, field.Invalid(fld.Index(i).Child("hostname"), lb.Hostname, "must be a DNS name, not an IP address"))
			}
		}
	}
	return errs
}

func validateIngress(ing *networkingv1.Ingress) field.ErrorList {
	spec := &ing.Spec
	fld := field.NewPath("spec")
	var errs field.ErrorList
	if len(spec.Rules) == 0 && spec.DefaultBackend == nil {
		errs = append(errs, field.Invalid(fld, spec.Rules, "either `defaultBackend` or `rules` must be specified"))
	}
	if spec.DefaultBackend != nil {
		errs = append(errs, validateIngressBackend(spec.DefaultBackend, fld.Child("defaultBackend"))...)
	}
	for i, rule := range spec.Rules {
		rf := fld.Child("rules").Index(i)
		if rule.Host != "" {
			if netutils.ParseIPSloppy(rule.Host) != nil {
				errs = append(errs, field.Invalid(rf.Child("host"), rule.Host, "must be a DNS name, not an IP address"))
			}
			errs = append(errs, validateHost(rule.Host, rf.Child("host"))...)
		}
		if rule.HTTP != nil {
			hf := rf.Child("http")
			if len(rule.HTTP.Paths) == 0 {
				errs = append(errs, field.Required(hf.Child("paths"), ""))
			}
			for j := range rule.HTTP.Paths {
				errs = append(errs, validateIngressPath(&rule.HTTP.Paths[j], hf.Child("paths").Index(j))...)
			}
		}
	}
	for i, tls := range spec.TLS {
		tf := fld.Child("tls").Index(i)
		for j, host := range tls.Hosts {
			errs = append(errs, validateHost(host, tf.Child("hosts").Index(j))...)
		}
		if tls.SecretName != "" {
			for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(tls.SecretName, false) {
				errs = append(errs, field.Invalid(tf.Child("secretName"), tls.SecretName, msg))
			}
		}
	}
	if spec.IngressClassName != nil {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(*spec.IngressClassName, false) {
			errs = append(errs, field.Invalid(fld.Child("ingressClassName"), *spec.IngressClassName, msg))
		}
		if v, ok := ing.Annotations[ingressClassAnnotation]; ok && v != *spec.IngressClassName {
			errs = append(errs, field.Invalid(field.NewPath("annotations").Child(ingressClassAnnotation), v, "must match `ingressClassName` when both are specified"))
		}
	}
	return errs
}

// validateHost checks a host of a rule or a TLS entry: a DNS subdomain, or
// one whose first label is "*".
func validateHost(host string, fld *field.Path) field.ErrorList {
	check := validation.IsDNS1123Subdomain
	if strings.Contains(host, "*") {
		check = validation.IsWildcardDNS1123Subdomain
	}
	var errs field.ErrorList
	for _, msg := range check(host) {
		errs = append(errs, field.Invalid(fld, host, msg))
	}
	return errs
}

// Sequences and endings an Exact or Prefix path may not have.
var (
	badPathSequences = []string{"//", "/./", "/../", "%2f", "%2F"}
	badPathSuffixes  = []string{"/..", "/."}
)

func validateIngressPath(p *networkingv1.HTTPIngressPath, fld *field.Path) field.ErrorList {
	if p.PathType == nil {
		return field.ErrorList{field.Required(fld.Child("pathType"), "pathType must be specified")}
	}
	var errs field.ErrorList
	switch *p.PathType {
	case networkingv1.PathTypeExact, networkingv1.PathTypePrefix:
		if !strings.HasPrefix(p.Path, "/") {
			errs = append(errs, field.Invalid(fld.Child("path"), p.Path, "must be an absolute path"))
		}
		for _, seq := range badPathSequences {
			if strings.Contains(p.Path, seq) {
				errs = append(errs, field.Invalid(fld.Child("path"), p.Path, fmt.Sprintf("must not contain '%s'", seq)))
			}
		}
		for _, suffix := range badPathSuffixes {
			if strings.HasSuffix(p.Path, suffix) {
				errs = append(errs, field.Invalid(fld.Child("path"), p.Path, fmt.Sprintf("cannot end with '%s'", suffix)))
			}
		}
	case networkingv1.PathTypeImplementationSpecific:
		if p.Path != "" && !strings.HasPrefix(p.Path, "/") {
			errs = append(errs, field.Invalid(fld.Child("path"), p.Path, "must be an absolute path"))
		}
	default:
		errs = append(errs, field.NotSupported(fld.Child("pathType"), *p.PathType, []string{
			string(networkingv1.PathTypeExact), string(networkingv1.PathTypeImplementationSpecific), string(networkingv1.PathTypePrefix),
		}))
	}
	return append(errs, validateIngressBackend(&p.Backend, fld.Child("backend"))...)
}

// validateIngressBackend checks a backend: a service (by name, with a port
// number or name) or a resource, exactly one of them.
func validateIngressBackend(b *networkingv1.IngressBackend, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case b.Resource != nil && b.Service != nil:
		return field.ErrorList{field.Invalid(fld, "", "cannot set both resource and service backends")}
	case b.Resource != nil:
		errs = append(errs, validateTypedReference(b.Resource.APIGroup, b.Resource.Kind, b.Resource.Name, fld.Child("resource"))...)
	case b.Service != nil:
		svc := fld.Child("service")
		if b.Service.Name == "" {
			errs = append(errs, field.Required(svc.Child("name"), ""))
		} else {
			for _, msg := range apimachineryvalidation.NameIsDNSLabel(b.Service.Name, false) {
				errs = append(errs, field.Invalid(svc.Child("name"), b.Service.Name, msg))
			}
		}
		port := b.Service.Port
		switch {
		case port.Name != "" && port.Number != 0:
			errs = append(errs, field.Invalid(fld, "", "cannot set both port name & port number"))
		case port.Name != "":
			for _, msg := range validation.IsValidPortName(port.Name) {
				errs = append(errs, field.Invalid(svc.Child("port", "name"), port.Name, msg))
			}
		case port.Number != 0:
			for _, msg := range validation.IsValidPortNum(int(port.Number)) {
				errs = append(errs, field.Invalid(svc.Child("port", "number"), port.Number, msg))
			}
		default:
			errs = append(errs, field.Required(fld, "port name or number is required"))
		}
	default:
		errs = append(errs, field.Invalid(fld, "", "resource or service backend is required"))
	}
	return errs
}

// validateTypedReference checks a reference to an object of any kind: an
// optional API group, a kind and a name.
func validateTypedReference(group *string, kind, name string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if group != nil {
		for _, msg := range validation.IsDNS1123Subdomain(*group) {
			errs = append(errs, field.Invalid(fld.Child("apiGroup"), *group, msg))
		}
	}
	if kind == "" {
		errs = append(errs, field.Required(fld.Child("kind"), ""))
	} else {
		for _, msg := range content.IsPathSegmentName(kind) {
			errs = append(errs, field.Invalid(fld.Child("kind"), kind, msg))
		}
	}
	if name == "" {
		errs = append(errs, field.Required(fld.Child("name"), ""))
	} else {
		for _, msg := range content.IsPathSegmentName(name) {
			errs = append(errs, field.Invalid(fld.Child("name"), name, msg))
		}
	}
	return errs
}

// maxIngressClassController caps the length of spec.controller.
const maxIngressClassController = 250

// IngressClasses is networking.k8s.io/v1 ingressclasses: which controller
// implements a class of Ingresses, which cannot change.
func IngressClasses() Strategy {
	return &Resource[*networkingv1.IngressClass]{
		Meta: Info{
			GVK:      networkingv1.SchemeGroupVersion.WithKind("IngressClass"),
			Resource: "ingressclasses", Singular: "ingressclass",
		},
		NewFunc:     func() *networkingv1.IngressClass { return &networkingv1.IngressClass{} },
		NewListFunc: func() runtime.Object { return &networkingv1.IngressClassList{} },
		Spec:        func(c *networkingv1.IngressClass) any { return c.Spec },
		Defaults: func(c *networkingv1.IngressClass) {
			if p := c.Spec.Parameters; p != nil && p.Scope == nil {
				p.Scope = ptr(networkingv1.IngressClassParametersReferenceScopeCluster)
			}
		},
		ValidateFunc: validateIngressClass,
		ValidateUpdateFunc: func(c, old *networkingv1.IngressClass) field.ErrorList {
			return apimachineryvalidation.ValidateImmutableField(c.Spec.Controller, old.Spec.Controller, field.NewPath("spec", "controller"))
		},
	}
}

func validateIngressClass(c *networkingv1.IngressClass) field.ErrorList {
	fld := field.NewPath("spec")
	var errs field.ErrorList
	if c.Spec.Controller == "" {
		errs = append(errs, field.Required(fld.Child("controller"), ""))
	} else {
		if len(c.Spec.Controller) > maxIngressClassController {
			errs = append(errs, field.TooLong(fld.Child("controller"), "", maxIngressClassController))
		}
		errs = append(errs, validation.IsDomainPrefixedPath(fld.Child("controller"), c.Spec.Controller)...)
	}
	p := c.Spec.Parameters
	if p == nil {
		return errs
	}
	pf := fld.Child("parameters")
	errs = append(errs, validateTypedReference(p.APIGroup, p.Kind, p.Name, pf)...)
	if p.Scope == nil {
		return append(errs, field.Required(pf.Child("scope"), ""))
	}
	switch *p.Scope {
	case networkingv1.IngressClassParametersReferenceScopeNamespace:
		if p.Namespace == nil {
			errs = append(errs, field.Required(pf.Child("namespace"), "`parameters.scope` is set to 'Namespace'"))
		} else {
			for _, msg := range apimachineryvalidation.ValidateNamespaceName(*p.Namespace, false) {
				errs = append(errs, field.Invalid(pf.Child("namespace"), *p.Namespace, msg))
			}
		}
	case networkingv1.IngressClassParametersReferenceScopeCluster:
		if p.Namespace != nil {
			errs = append(errs, field.Forbidden(pf.Child("namespace"), "`parameters.scope` is set to 'Cluster'"))
		}
	default:
		errs = append(errs, field.NotSupported(pf.Child("scope"), *p.Scope, []string{
			networkingv1.IngressClassParametersReferenceScopeCluster, networkingv1.IngressClassParametersReferenceScopeNamespace,
		}))
	}
	return errs
}

// NetworkPolicies is networking.k8s.io/v1 networkpolicies: which traffic
// the selected pods accept and send.
func NetworkPolicies() Strategy {
	return &Resource[*networkingv1.NetworkPolicy]{
		Meta: Info{
			GVK:      networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy"),
			Resource: "networkpolicies", Singular: "networkpolicy", ShortNames: []string{"netpol"},
			Namespaced: true,
		},
		NewFunc:      func() *networkingv1.NetworkPolicy { return &networkingv1.NetworkPolicy{} },
		NewListFunc:  func() runtime.Object { return &networkingv1.NetworkPolicyList{} },
		Spec:         func(n *networkingv1.NetworkPolicy) any { return n.Spec },
		Defaults:     defaultNetworkPolicy,
		ValidateFunc: validateNetworkPolicy,
	}
}

// defaultNetworkPolicy sets the ports' protocol to TCP and, when no
// policyTypes are given, makes the policy an Ingress one, and an Egress one
// too when it has egress rules.
func defaultNetworkPolicy(n *networkingv1.NetworkPolicy) {
	defaultPorts := func(ports []networkingv1.NetworkPolicyPort) {
		for i := range ports {
			if ports[i].Protocol == nil {
				ports[i].Protocol = ptr(corev1.ProtocolTCP)
			}
		}
	}
	for i := range n.Spec.Ingress {
		defaultPorts(n.Spec.Ingress[i].Ports)
	}
	for i := range n.Spec.Egress {
		defaultPorts(n.Spec.Egress[i].Ports)
	}
	if len(n.Spec.PolicyTypes) == 0 {
		n.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
		if len(n.Spec.Egress) != 0 {
			n.Spec.PolicyTypes = append(n.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)
		}
	}
}

func validateNetworkPolicy(n *networkingv1.NetworkPolicy) field.ErrorList {
	fld := field.NewPath("spec")
	errs := metav1validation.ValidateLabelSelector(&n.Spec.PodSelector, metav1validation.LabelSelectorValidationOptions{}, fld.Child("podSelector"))
	for i, rule := range n.Spec.Ingress {
		rf := fld.Child("ingress").Index(i)
		for j := range rule.Ports {
			errs = append(errs, validateNetworkPolicyPort(&rule.Ports[j], rf.Child("ports").Index(j))...)
		}
		for j := range rule.From {
			errs = append(errs, validateNetworkPolicyPeer(&rule.From[j], rf.Child("from").Index(j))...)
		}
	}
	for i, rule := range n.Spec.Egress {
		rf := fld.Child("egress").Index(i)
		for j := range rule.Ports {
			errs = append(errs, validateNetworkPolicyPort(&rule.Ports[j], rf.Child("ports").Index(j))...)
		}
		for j := range rule.To {
			errs = append(errs, validateNetworkPolicyPeer(&rule.To[j], rf.Child("to").Index(j))...)
		}
	}
	types := []string{string(networkingv1.PolicyTypeIngress), string(networkingv1.PolicyTypeEgress)}
	if len(n.Spec.PolicyTypes) > len(types) {
		return append(errs, field.Invalid(fld.Child("policyTypes"), n.Spec.PolicyTypes, "may not specify more than two policyTypes"))
	}
	for i, t := range n.Spec.PolicyTypes {
		if t != networkingv1.PolicyTypeIngress && t != networkingv1.PolicyTypeEgress {
			errs = append(errs, field.NotSupported(fld.Child("policyTypes").Index(i), t, types))
		}
	}
	return errs
}

func validateNetworkPolicyPort(p *networkingv1.NetworkPolicyPort, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP && *p.Protocol != corev1.ProtocolUDP && *p.Protocol != corev1.ProtocolSCTP {
		errs = append(errs, field.NotSupported(fld.Child("protocol"), *p.Protocol, []string{string(corev1.ProtocolTCP), string(corev1.ProtocolUDP), string(corev1.ProtocolSCTP)}))
	}
	switch {
	case p.Port == nil:
		if p.EndPort != nil {
			errs = append(errs, field.Invalid(fld.Child("endPort"), *p.EndPort, "may not be specified when `port` is not specified"))
		}
	case p.Port.Type == intstr.Int:
		for _, msg := range validation.IsValidPortNum(int(p.Port.IntVal)) {
			errs = append(errs, field.Invalid(fld.Child("port"), p.Port.IntVal, msg))
		}
		if p.EndPort != nil {
			if *p.EndPort < p.Port.IntVal {
				errs = append(errs, field.Invalid(fld.Child("endPort"), *p.EndPort, "must be greater than or equal to `port`"))
			}
			for _, msg := range validation.IsValidPortNum(int(*p.EndPort)) {
				errs = append(errs, field.Invalid(fld.Child("endPort"), *p.EndPort, msg))
			}
		}
	default:
		if p.EndPort != nil {
			errs = append(errs, field.Invalid(fld.Child("endPort"), *p.EndPort, "may not be specified when `port` is non-numeric"))
		}
		for _, msg := range validation.IsValidPortName(p.Port.StrVal) {
			errs = append(errs, field.Invalid(fld.Child("port"), p.Port.StrVal, msg))
		}
	}
	return errs
}

// validateNetworkPolicyPeer checks a peer: pod and namespace selectors,
// which may be combined, or an IP block alone.
func validateNetworkPolicyPeer(p *networkingv1.NetworkPolicyPeer, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	opts := metav1validation.LabelSelectorValidationOptions{}
	if p.PodSelector != nil {
		n++
		errs = append(errs, metav1validation.ValidateLabelSelector(p.PodSelector, opts, fld.Child("podSelector"))...)
	}
	if p.NamespaceSelector != nil {
		n++
		errs = append(errs, metav1validation.ValidateLabelSelector(p.NamespaceSelector, opts, fld.Child("namespaceSelector"))...)
	}
	if p.IPBlock != nil {
		n++
		errs = append(errs, validateIPBlock(p.IPBlock, fld.Child("ipBlock"))...)
	}
	switch {
	case n == 0:
		errs = append(errs, field.Required(fld, "must specify a peer"))
	case n > 1 && p.IPBlock != nil:
		errs = append(errs, field.Forbidden(fld, "may not specify both ipBlock and another peer"))
	}
	return errs
}

// validateIPBlock checks a CIDR and its exceptions, each of which must be
// strictly inside it.
func validateIPBlock(b *networkingv1.IPBlock, fld *field.Path) field.ErrorList {
	if b.CIDR == "" {
		return field.ErrorList{field.Required(fld.Child("cidr"), "")}
	}
	errs := validation.IsValidCIDRForLegacyField(fld.Child("cidr"), b.CIDR, false, nil)
	_, cidr, err := netutils.ParseCIDRSloppy(b.CIDR)
	if err != nil {
		return errs
	}
	for i, s := range b.Except {
		ef := fld.Child("except").Index(i)
		errs = append(errs, validation.IsValidCIDRForLegacyField(ef, s, false, nil)...)
		_, except, err := netutils.ParseCIDRSloppy(s)
		if err != nil {
			continue
		}
		outer, _ := cidr.Mask.Size()
		inner, _ := except.Mask.Size()
		if !cidr.Contains(except.IP) || outer >= inner {
			errs = append(errs, field.Invalid(ef, s, "must be a strict subset of `cidr`"))
		}
	}
	return errs
}
