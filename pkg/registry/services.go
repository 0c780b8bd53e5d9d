package registry

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// defaultClientIPTimeout is the session affinity timeout a ClientIP
// Service gets when it sets none (three hours), and maxClientIPTimeout the
// largest accepted (one day), as in Kubernetes.
const (
	defaultClientIPTimeout int32 = 10800
	maxClientIPTimeout     int32 = 86400
)

var (
	serviceTypes     = sets.New(corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeExternalName)
	portProtocols    = sets.New(corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP)
	affinityTypes    = sets.New(corev1.ServiceAffinityClientIP, corev1.ServiceAffinityNone)
	trafficPolicies  = sets.New(corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal)
	ipFamilyPolicies = sets.New(corev1.IPFamilyPolicySingleStack, corev1.IPFamilyPolicyPreferDualStack, corev1.IPFamilyPolicyRequireDualStack)
	ipFamilies       = sets.New(corev1.IPv4Protocol, corev1.IPv6Protocol)
)

// Services is core/v1 services: a status subresource, the clusterIP and
// nodePorts the API server allocates (see the apiserver package) kept
// across updates that omit them, and Kubernetes' validation of ports,
// types and addresses.
func Services() Strategy {
	return &serviceStrategy{Resource[*corev1.Service]{
		Meta: Info{
			GVK:      corev1.SchemeGroupVersion.WithKind("Service"),
			Resource: "services", Singular: "service", ShortNames: []string{"svc"}, Categories: []string{"all"},
			Namespaced: true, Status: true, ReturnDeletedObject: true,
		},
		NewFunc:        func() *corev1.Service { return &corev1.Service{} },
		NewListFunc:    func() runtime.Object { return &corev1.ServiceList{} },
		NameFunc:       apivalidation.NameIsDNS1035Label,
		CopyStatus:     func(dst, src *corev1.Service) { dst.Status = src.Status },
		ResetForStatus: func(s, old *corev1.Service) { s.Spec = old.Spec },
		ResetStatus:    func(s *corev1.Service) { s.Status = corev1.ServiceStatus{} },
		Defaults:       defaultService,
		ValidateFunc:   validateService,
		ValidateUpdateFunc: func(s, old *corev1.Service) field.ErrorList {
			return validateServiceUpdate(s, old)
		},
		Fields: func(s *corev1.Service) fields.Set {
			return fields.Set{"spec.clusterIP": s.Spec.ClusterIP, "spec.type": string(s.Spec.Type)}
		},
	}}
}

// serviceStrategy is the Service Resource with the update preparation
// Kubernetes gives Services: what the server allocated survives an update
// that leaves it out, and what a new type no longer uses is dropped.
type serviceStrategy struct {
	Resource[*corev1.Service]
}

// PrepareForUpdate implements Strategy.
func (r *serviceStrategy) PrepareForUpdate(obj, old runtime.Object) {
	r.Resource.PrepareForUpdate(obj, old)
	s, o := r.cast(obj), r.cast(old)
	keepAllocatedValues(s, o)
	dropTypeDependentFields(s, o)
}

// keepAllocatedValues copies into s the clusterIPs and nodePorts of old
// that s still needs but does not state, as a client that sends back a
// Service without them (kubectl apply of the original manifest) means to
// keep them.
func keepAllocatedValues(s, old *corev1.Service) {
	if NeedsClusterIP(old) && NeedsClusterIP(s) {
		if s.Spec.ClusterIP == "" {
			s.Spec.ClusterIP = old.Spec.ClusterIP
		}
		if len(s.Spec.ClusterIPs) == 0 && len(old.Spec.ClusterIPs) > 0 {
			s.Spec.ClusterIPs = slices.Clone(old.Spec.ClusterIPs)
		}
	}
	if HasNodePorts(old) && HasNodePorts(s) {
		byPort := map[portKey]int32{}
		for _, p := range old.Spec.Ports {
			if p.NodePort != 0 {
				byPort[portKey{p.Port, p.Protocol}] = p.NodePort
			}
		}
		for i := range s.Spec.Ports {
			p := &s.Spec.Ports[i]
			if p.NodePort == 0 {
				p.NodePort = byPort[portKey{p.Port, p.Protocol}]
			}
		}
	}
	if NeedsHealthCheckNodePort(old) && NeedsHealthCheckNodePort(s) && s.Spec.HealthCheckNodePort == 0 {
		s.Spec.HealthCheckNodePort = old.Spec.HealthCheckNodePort
	}
}

type portKey struct {
	port     int32
	protocol corev1.Protocol
}

// dropTypeDependentFields clears what s's type does not use when the
// update changed the type and left those fields as they were.
func dropTypeDependentFields(s, old *corev1.Service) {
	if s.Spec.Type == old.Spec.Type {
		return
	}
	if !NeedsClusterIP(s) && slices.Equal(s.Spec.ClusterIPs, old.Spec.ClusterIPs) && s.Spec.ClusterIP == old.Spec.ClusterIP {
		s.Spec.ClusterIP, s.Spec.ClusterIPs = "", nil
		if s.Spec.IPFamilyPolicy != nil && old.Spec.IPFamilyPolicy != nil && *s.Spec.IPFamilyPolicy == *old.Spec.IPFamilyPolicy {
			s.Spec.IPFamilyPolicy = nil
		}
		if slices.Equal(s.Spec.IPFamilies, old.Spec.IPFamilies) {
			s.Spec.IPFamilies = nil
		}
	}
	if !HasNodePorts(s) {
		for i := range s.Spec.Ports {
			p := &s.Spec.Ports[i]
			for _, q := range old.Spec.Ports {
				if q.Port == p.Port && q.Protocol == p.Protocol && q.NodePort == p.NodePort {
					p.NodePort = 0
				}
			}
		}
	}
	if !NeedsHealthCheckNodePort(s) && s.Spec.HealthCheckNodePort == old.Spec.HealthCheckNodePort {
		s.Spec.HealthCheckNodePort = 0
	}
	if s.Spec.Type != corev1.ServiceTypeLoadBalancer {
		if ptrEqual(s.Spec.AllocateLoadBalancerNodePorts, old.Spec.AllocateLoadBalancerNodePorts) {
			s.Spec.AllocateLoadBalancerNodePorts = nil
		}
		if ptrEqual(s.Spec.LoadBalancerClass, old.Spec.LoadBalancerClass) {
			s.Spec.LoadBalancerClass = nil
		}
	}
	if s.Spec.Type != corev1.ServiceTypeNodePort && s.Spec.Type != corev1.ServiceTypeLoadBalancer &&
		s.Spec.ExternalTrafficPolicy == old.Spec.ExternalTrafficPolicy {
		s.Spec.ExternalTrafficPolicy = ""
	}
}

func ptrEqual[T comparable](a, b *T) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// IsHeadlessService reports whether s asked for no cluster IP.
func IsHeadlessService(s *corev1.Service) bool {
	return s.Spec.ClusterIP == corev1.ClusterIPNone || (len(s.Spec.ClusterIPs) > 0 && s.Spec.ClusterIPs[0] == corev1.ClusterIPNone)
}

// NeedsClusterIP reports whether the server allocates s a cluster IP:
// every type but ExternalName, unless headless.
func NeedsClusterIP(s *corev1.Service) bool {
	return s.Spec.Type != corev1.ServiceTypeExternalName && !IsHeadlessService(s)
}

// NeedsNodePorts reports whether the server allocates node ports to the
// ports of s that have none: NodePort Services, and LoadBalancer ones
// unless allocateLoadBalancerNodePorts is false.
func NeedsNodePorts(s *corev1.Service) bool {
	switch s.Spec.Type {
	case corev1.ServiceTypeNodePort:
		return true
	case corev1.ServiceTypeLoadBalancer:
		return s.Spec.AllocateLoadBalancerNodePorts == nil || *s.Spec.AllocateLoadBalancerNodePorts
	}
	return false
}

// NeedsHealthCheckNodePort reports whether the server allocates s a health
// check node port: a LoadBalancer with externalTrafficPolicy Local.
func NeedsHealthCheckNodePort(s *corev1.Service) bool {
	return s.Spec.Type == corev1.ServiceTypeLoadBalancer && s.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
}

func defaultService(s *corev1.Service) {
	spec := &s.Spec
	if spec.Type == "" {
		spec.Type = corev1.ServiceTypeClusterIP
	}
	if spec.SessionAffinity == "" {
		spec.SessionAffinity = corev1.ServiceAffinityNone
	}
	if spec.SessionAffinity == corev1.ServiceAffinityClientIP &&
		(spec.SessionAffinityConfig == nil || spec.SessionAffinityConfig.ClientIP == nil || spec.SessionAffinityConfig.ClientIP.TimeoutSeconds == nil) {
		timeout := defaultClientIPTimeout
		spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: &timeout}}
	}
	for i := range spec.Ports {
		p := &spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort == (intstr.IntOrString{}) {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	if spec.Type == corev1.ServiceTypeNodePort || spec.Type == corev1.ServiceTypeLoadBalancer {
		if spec.ExternalTrafficPolicy == "" {
			spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
		}
	}
	if spec.InternalTrafficPolicy == nil && spec.Type != corev1.ServiceTypeExternalName {
		p := corev1.ServiceInternalTrafficPolicyCluster
		spec.InternalTrafficPolicy = &p
	}
	if spec.Type == corev1.ServiceTypeLoadBalancer && spec.AllocateLoadBalancerNodePorts == nil {
		spec.AllocateLoadBalancerNodePorts = ptr(true)
	}
	// clusterIP and clusterIPs state the same primary address.
	if spec.ClusterIP != "" && len(spec.ClusterIPs) == 0 {
		spec.ClusterIPs = []string{spec.ClusterIP}
	} else if spec.ClusterIP == "" && len(spec.ClusterIPs) > 0 {
		spec.ClusterIP = spec.ClusterIPs[0]
	}
	if spec.Type != corev1.ServiceTypeExternalName {
		defaultIPFamilies(s)
	}
	for i := range s.Status.LoadBalancer.Ingress {
		in := &s.Status.LoadBalancer.Ingress[i]
		if in.IP != "" && in.IPMode == nil {
			in.IPMode = ptr(corev1.LoadBalancerIPModeVIP)
		}
	}
}

// defaultIPFamilies gives s the families of a single-stack IPv4 cluster:
// SingleStack, except a headless Service without a selector, which takes
// RequireDualStack, as Kubernetes gives it every family the cluster has.
func defaultIPFamilies(s *corev1.Service) {
	spec := &s.Spec
	if spec.IPFamilyPolicy == nil {
		policy := corev1.IPFamilyPolicySingleStack
		if IsHeadlessService(s) && len(spec.Selector) == 0 {
			policy = corev1.IPFamilyPolicyRequireDualStack
		}
		spec.IPFamilyPolicy = &policy
	}
	if len(spec.IPFamilies) == 0 {
		family := corev1.IPv4Protocol
		if len(spec.ClusterIPs) > 0 && spec.ClusterIPs[0] != corev1.ClusterIPNone && strings.Contains(spec.ClusterIPs[0], ":") {
			family = corev1.IPv6Protocol
		}
		spec.IPFamilies = []corev1.IPFamily{family}
	}
}

func validateService(s *corev1.Service) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	headless := IsHeadlessService(s)
	if len(s.Spec.Ports) == 0 && !headless && s.Spec.Type != corev1.ServiceTypeExternalName {
		errs = append(errs, field.Required(spec.Child("ports"), ""))
	}
	switch s.Spec.Type {
	case corev1.ServiceTypeLoadBalancer:
		if headless {
			errs = append(errs, field.Invalid(spec.Child("clusterIPs").Index(0), s.Spec.ClusterIPs, "may not be set to 'None' for LoadBalancer services"))
		}
	case corev1.ServiceTypeNodePort:
		if headless {
			errs = append(errs, field.Invalid(spec.Child("clusterIPs").Index(0), s.Spec.ClusterIPs, "may not be set to 'None' for NodePort services"))
		}
	case corev1.ServiceTypeExternalName:
		if len(s.Spec.ClusterIPs) > 0 {
			errs = append(errs, field.Forbidden(spec.Child("clusterIPs"), "may not be set for ExternalName services"))
		}
		if len(s.Spec.IPFamilies) > 0 {
			errs = append(errs, field.Forbidden(spec.Child("ipFamilies"), "may not be set for ExternalName services"))
		}
		if s.Spec.IPFamilyPolicy != nil {
			errs = append(errs, field.Forbidden(spec.Child("ipFamilyPolicy"), "may not be set for ExternalName services"))
		}
		// A trailing dot marks the name fully qualified.
		cname := strings.TrimSuffix(s.Spec.ExternalName, ".")
		if cname == "" {
			errs = append(errs, field.Required(spec.Child("externalName"), ""))
		} else {
			for _, msg := range validation.IsDNS1123Subdomain(cname) {
				errs = append(errs, field.Invalid(spec.Child("externalName"), cname, msg))
			}
		}
	}

	portsPath := spec.Child("ports")
	names := sets.New[string]()
	for i := range s.Spec.Ports {
		errs = append(errs, validateServicePort(&s.Spec.Ports[i], len(s.Spec.Ports) > 1, names, portsPath.Index(i))...)
	}
	if s.Spec.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabels(s.Spec.Selector, spec.Child("selector"))...)
	}
	if s.Spec.SessionAffinity == "" {
		errs = append(errs, field.Required(spec.Child("sessionAffinity"), ""))
	} else if !affinityTypes.Has(s.Spec.SessionAffinity) {
		errs = append(errs, field.NotSupported(spec.Child("sessionAffinity"), s.Spec.SessionAffinity, sets.List(affinityTypes)))
	}
	if s.Spec.SessionAffinity == corev1.ServiceAffinityClientIP {
		errs = append(errs, validateClientIPConfig(s.Spec.SessionAffinityConfig, spec.Child("sessionAffinityConfig"))...)
	} else if s.Spec.SessionAffinity == corev1.ServiceAffinityNone && s.Spec.SessionAffinityConfig != nil {
		errs = append(errs, field.Forbidden(spec.Child("sessionAffinityConfig"), fmt.Sprintf("must not be set when session affinity is %s", corev1.ServiceAffinityNone)))
	}
	errs = append(errs, validateClusterIPs(s, spec)...)
	for i, ip := range s.Spec.ExternalIPs {
		idx := spec.Child("externalIPs").Index(i)
		errs = append(errs, validation.IsValidIP(idx, ip)...)
	}
	if s.Spec.Type == "" {
		errs = append(errs, field.Required(spec.Child("type"), ""))
	} else if !serviceTypes.Has(s.Spec.Type) {
		errs = append(errs, field.NotSupported(spec.Child("type"), s.Spec.Type, sets.List(serviceTypes)))
	}
	if s.Spec.Type == corev1.ServiceTypeClusterIP {
		for i := range s.Spec.Ports {
			if s.Spec.Ports[i].NodePort != 0 {
				errs = append(errs, field.Forbidden(portsPath.Index(i).Child("nodePort"), "may not be used when `type` is 'ClusterIP'"))
			}
		}
	}
	// A port and protocol may be served once, and a node port used once per protocol.
	seen := map[portKey]bool{}
	seenNode := map[portKey]bool{}
	for i, p := range s.Spec.Ports {
		k := portKey{p.Port, p.Protocol}
		if seen[k] {
			errs = append(errs, field.Duplicate(portsPath.Index(i), corev1.ServicePort{Port: p.Port, Protocol: p.Protocol}))
		}
		seen[k] = true
		if p.NodePort == 0 {
			continue
		}
		nk := portKey{p.NodePort, p.Protocol}
		if seenNode[nk] {
			errs = append(errs, field.Duplicate(portsPath.Index(i).Child("nodePort"), p.NodePort))
		}
		seenNode[nk] = true
	}
	errs = append(errs, validateTrafficPolicies(s, spec)...)
	if s.Spec.HealthCheckNodePort != 0 && !NeedsHealthCheckNodePort(s) {
		errs = append(errs, field.Invalid(spec.Child("healthCheckNodePort"), s.Spec.HealthCheckNodePort, "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"))
	}
	if s.Spec.AllocateLoadBalancerNodePorts != nil && s.Spec.Type != corev1.ServiceTypeLoadBalancer {
		errs = append(errs, field.Forbidden(spec.Child("allocateLoadBalancerNodePorts"), "may only be used when `type` is 'LoadBalancer'"))
	}
	if s.Spec.Type == corev1.ServiceTypeLoadBalancer && s.Spec.AllocateLoadBalancerNodePorts == nil {
		errs = append(errs, field.Required(spec.Child("allocateLoadBalancerNodePorts"), ""))
	}
	if s.Spec.LoadBalancerClass != nil && s.Spec.Type != corev1.ServiceTypeLoadBalancer {
		errs = append(errs, field.Forbidden(spec.Child("loadBalancerClass"), "may only be used when `type` is 'LoadBalancer'"))
	}
	errs = append(errs, validateIPFamilies(s, spec)...)
	errs = append(errs, validateLoadBalancerStatus(&s.Status.LoadBalancer, field.NewPath("status", "loadBalancer"))...)
	return errs
}

// validateLoadBalancerStatus checks the addresses a load balancer
// controller reports.
func validateLoadBalancerStatus(st *corev1.LoadBalancerStatus, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, in := range st.Ingress {
		idx := fld.Child("ingress").Index(i)
		if in.IP != "" {
			errs = append(errs, validation.IsValidIP(idx.Child("ip"), in.IP)...)
		}
		switch {
		case in.IPMode != nil && in.IP == "":
			errs = append(errs, field.Forbidden(idx.Child("ipMode"), "may not be specified when `ip` is not set"))
		case in.IPMode == nil && in.IP != "":
			errs = append(errs, field.Required(idx.Child("ipMode"), "must be specified when `ip` is set"))
		case in.IPMode != nil && *in.IPMode != corev1.LoadBalancerIPModeVIP && *in.IPMode != corev1.LoadBalancerIPModeProxy:
			errs = append(errs, field.NotSupported(idx.Child("ipMode"), *in.IPMode, []corev1.LoadBalancerIPMode{corev1.LoadBalancerIPModeProxy, corev1.LoadBalancerIPModeVIP}))
		}
		if in.Hostname != "" {
			for _, msg := range validation.IsDNS1123Subdomain(in.Hostname) {
				errs = append(errs, field.Invalid(idx.Child("hostname"), in.Hostname, msg))
			}
			if _, err := netip.ParseAddr(in.Hostname); err == nil {
				errs = append(errs, field.Invalid(idx.Child("hostname"), in.Hostname, "must be a DNS name, not an IP address"))
			}
		}
	}
	return errs
}

func validateServicePort(p *corev1.ServicePort, requireName bool, names sets.Set[string], fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if requireName && p.Name == "" {
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
	if p.Protocol == "" {
		errs = append(errs, field.Required(fld.Child("protocol"), ""))
	} else if !portProtocols.Has(p.Protocol) {
		errs = append(errs, field.NotSupported(fld.Child("protocol"), p.Protocol, sets.List(portProtocols)))
	}
	errs = append(errs, validatePortNumOrName(p.TargetPort, fld.Child("targetPort"))...)
	if p.AppProtocol != nil {
		for _, msg := range validation.IsQualifiedName(*p.AppProtocol) {
			errs = append(errs, field.Invalid(fld.Child("appProtocol"), *p.AppProtocol, msg))
		}
	}
	if p.NodePort != 0 {
		for _, msg := range validation.IsValidPortNum(int(p.NodePort)) {
			errs = append(errs, field.Invalid(fld.Child("nodePort"), p.NodePort, msg))
		}
	}
	return errs
}

// validatePortNumOrName checks a port given by number or by name.
func validatePortNumOrName(port intstr.IntOrString, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch port.Type {
	case intstr.Int:
		for _, msg := range validation.IsValidPortNum(port.IntValue()) {
			errs = append(errs, field.Invalid(fld, port.IntValue(), msg))
		}
	case intstr.String:
		for _, msg := range validation.IsValidPortName(port.StrVal) {
			errs = append(errs, field.Invalid(fld, port.StrVal, msg))
		}
	default:
		errs = append(errs, field.Invalid(fld, port, "must be an int or a string"))
	}
	return errs
}

func validateClientIPConfig(c *corev1.SessionAffinityConfig, fld *field.Path) field.ErrorList {
	timeout := fld.Child("clientIP").Child("timeoutSeconds")
	if c == nil || c.ClientIP == nil || c.ClientIP.TimeoutSeconds == nil {
		return field.ErrorList{field.Required(timeout, "")}
	}
	if t := *c.ClientIP.TimeoutSeconds; t <= 0 || t > maxClientIPTimeout {
		return field.ErrorList{field.Invalid(timeout, t, fmt.Sprintf("must be greater than 0 and less than %d", maxClientIPTimeout))}
	}
	return nil
}

// validateClusterIPs checks clusterIP and clusterIPs agree and hold
// addresses, or the one "None" of a headless Service.
func validateClusterIPs(s *corev1.Service, spec *field.Path) field.ErrorList {
	var errs field.ErrorList
	ipsPath := spec.Child("clusterIPs")
	if len(s.Spec.ClusterIPs) > 0 && s.Spec.ClusterIP != s.Spec.ClusterIPs[0] {
		errs = append(errs, field.Invalid(ipsPath, s.Spec.ClusterIPs, "first value must match `clusterIP`"))
	}
	if s.Spec.ClusterIP != "" && len(s.Spec.ClusterIPs) == 0 {
		errs = append(errs, field.Invalid(ipsPath, s.Spec.ClusterIPs, "must be set when `clusterIP` is set"))
	}
	if len(s.Spec.ClusterIPs) > 2 {
		errs = append(errs, field.Invalid(ipsPath, s.Spec.ClusterIPs, "may only hold up to 2 values"))
	}
	for i, ip := range s.Spec.ClusterIPs {
		idx := ipsPath.Index(i)
		if ip == corev1.ClusterIPNone {
			if i != 0 || len(s.Spec.ClusterIPs) > 1 {
				errs = append(errs, field.Invalid(idx, ip, "'None' must be the first and only value"))
			}
			continue
		}
		errs = append(errs, validation.IsValidIP(idx, ip)...)
	}
	return errs
}

func validateTrafficPolicies(s *corev1.Service, spec *field.Path) field.ErrorList {
	var errs field.ErrorList
	etp := spec.Child("externalTrafficPolicy")
	external := s.Spec.Type == corev1.ServiceTypeNodePort || s.Spec.Type == corev1.ServiceTypeLoadBalancer
	switch {
	case !external && s.Spec.ExternalTrafficPolicy != "":
		errs = append(errs, field.Invalid(etp, s.Spec.ExternalTrafficPolicy, "may only be set for externally-accessible services"))
	case external && s.Spec.ExternalTrafficPolicy == "":
		errs = append(errs, field.Required(etp, ""))
	case external && !trafficPolicies.Has(s.Spec.ExternalTrafficPolicy):
		errs = append(errs, field.NotSupported(etp, s.Spec.ExternalTrafficPolicy, sets.List(trafficPolicies)))
	}
	if s.Spec.Type != corev1.ServiceTypeExternalName {
		itp := spec.Child("internalTrafficPolicy")
		if s.Spec.InternalTrafficPolicy == nil {
			errs = append(errs, field.Required(itp, ""))
		} else if p := *s.Spec.InternalTrafficPolicy; p != corev1.ServiceInternalTrafficPolicyCluster && p != corev1.ServiceInternalTrafficPolicyLocal {
			errs = append(errs, field.NotSupported(itp, p, []corev1.ServiceInternalTrafficPolicy{corev1.ServiceInternalTrafficPolicyCluster, corev1.ServiceInternalTrafficPolicyLocal}))
		}
	}
	return errs
}

func validateIPFamilies(s *corev1.Service, spec *field.Path) field.ErrorList {
	if s.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	var errs field.ErrorList
	if p := s.Spec.IPFamilyPolicy; p != nil && !ipFamilyPolicies.Has(*p) {
		errs = append(errs, field.NotSupported(spec.Child("ipFamilyPolicy"), *p, sets.List(ipFamilyPolicies)))
	}
	seen := sets.New[corev1.IPFamily]()
	for i, f := range s.Spec.IPFamilies {
		idx := spec.Child("ipFamilies").Index(i)
		if !ipFamilies.Has(f) {
			errs = append(errs, field.NotSupported(idx, f, sets.List(ipFamilies)))
		} else if seen.Has(f) {
			errs = append(errs, field.Duplicate(idx, f))
		}
		seen.Insert(f)
	}
	return errs
}

func validateServiceUpdate(s, old *corev1.Service) field.ErrorList {
	// The addresses may change only to or from ExternalName, which has none.
	if s.Spec.Type == corev1.ServiceTypeExternalName || old.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	var errs field.ErrorList
	ipsPath := field.NewPath("spec", "clusterIPs")
	for i := range min(len(s.Spec.ClusterIPs), len(old.Spec.ClusterIPs)) {
		if s.Spec.ClusterIPs[i] != old.Spec.ClusterIPs[i] {
			errs = append(errs, field.Invalid(ipsPath.Index(i), s.Spec.ClusterIPs[i], "may not change once set"))
		}
	}
	if len(s.Spec.ClusterIPs) == 0 && len(old.Spec.ClusterIPs) > 0 {
		errs = append(errs, field.Invalid(ipsPath.Index(0), "", "may not change once set"))
	}
	for i := range min(len(s.Spec.IPFamilies), len(old.Spec.IPFamilies)) {
		if i == 0 && s.Spec.IPFamilies[0] != old.Spec.IPFamilies[0] {
			errs = append(errs, field.Invalid(field.NewPath("spec", "ipFamilies").Index(0), s.Spec.IPFamilies[0], "may not change once set"))
		}
	}
	return errs
}

// HasNodePorts reports whether the ports of s may hold node ports:
// NodePort and LoadBalancer Services (a LoadBalancer that does not have
// them allocated may still ask for some).
func HasNodePorts(s *corev1.Service) bool {
	return s.Spec.Type == corev1.ServiceTypeNodePort || s.Spec.Type == corev1.ServiceTypeLoadBalancer
}
