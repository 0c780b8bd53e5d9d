package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func svcBackend(name string, port int32) networkingv1.IngressBackend {
	return networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: name, Port: networkingv1.ServiceBackendPort{Number: port}}}
}

func ingress(host, path string, pathType networkingv1.PathType) *networkingv1.Ingress {
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{
			Host: host,
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{Path: path, PathType: &pathType, Backend: svcBackend("web", 80)}},
			}},
		}}},
	}
}

func editIngress(ing *networkingv1.Ingress, edit func(*networkingv1.Ingress)) *networkingv1.Ingress {
	edit(ing)
	return ing
}

func TestIngressValidation(t *testing.T) {
	prefix := networkingv1.PathTypePrefix
	runValidation(t, Ingresses(), []validationCase{
		{"valid", ingress("example.com", "/", prefix), nil},
		{"wildcard host", ingress("*.example.com", "/api", networkingv1.PathTypeExact), nil},
		{"implementation specific, empty path", ingress("", "", networkingv1.PathTypeImplementationSpecific), nil},
		{"default backend only", &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "default"},
			Spec: networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Name: "http"}}}}}, nil},
		{"nothing", &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "default"}},
			[]string{"spec: Invalid value: null: either `defaultBackend` or `rules` must be specified"}},
		{"relative prefix path", ingress("example.com", "api", prefix),
			[]string{`spec.rules[0].http.paths[0].path: Invalid value: "api": must be an absolute path`}},
		{"bad path sequences", ingress("example.com", "/a//b/..", prefix), []string{
			`spec.rules[0].http.paths[0].path: Invalid value: "/a//b/..": must not contain '//'`,
			`spec.rules[0].http.paths[0].path: Invalid value: "/a//b/..": cannot end with '/..'`,
		}},
		{"no path type", editIngress(ingress("example.com", "/", prefix), func(i *networkingv1.Ingress) { i.Spec.Rules[0].HTTP.Paths[0].PathType = nil }),
			[]string{"spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified"}},
		{"unknown path type", ingress("example.com", "/", "Regex"),
			[]string{`spec.rules[0].http.paths[0].pathType: Unsupported value: "Regex": supported values: "Exact", "ImplementationSpecific", "Prefix"`}},
		{"IP host", ingress("10.0.0.1", "/", prefix),
			[]string{`spec.rules[0].host: Invalid value: "10.0.0.1": must be a DNS name, not an IP address`}},
		{"bad wildcard", ingress("foo.*.com", "/", prefix),
			[]string{`spec.rules[0].host: Invalid value: "foo.*.com": a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. '*.example.com', regex used for validation is '\*\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`}},
		{"no paths", editIngress(ingress("example.com", "/", prefix), func(i *networkingv1.Ingress) { i.Spec.Rules[0].HTTP.Paths = nil }),
			[]string{"spec.rules[0].http.paths: Required value"}},
		{"port name and number", editIngress(ingress("example.com", "/", prefix), func(i *networkingv1.Ingress) {
			i.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port.Name = "http"
		}), []string{`spec.rules[0].http.paths[0].backend: Invalid value: "": cannot set both port name & port number`}},
		{"no port", editIngress(ingress("example.com", "/", prefix), func(i *networkingv1.Ingress) {
			i.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port.Number = 0
		}), []string{"spec.rules[0].http.paths[0].backend: Required value: port name or number is required"}},
		{"bad port number", editIngress(ingress("example.com", "/", prefix), func(i *networkingv1.Ingress) {
			i.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port.Number = 70000
		}), []string{"spec.rules[0].http.paths[0].backend.service.port.number: Invalid value: 70000: must be between 1 and 65535, inclusive"}},
		{"service and resource", editIngress(ingress("example.com", "/", prefix), func(i *networkingv1.Ingress) {
			i.Spec.Rules[0].HTTP.Paths[0].Backend.Resource = &corev1.TypedLocalObjectReference{Kind: "Bucket", Name: "b"}
		}), []string{`spec.rules[0].http.paths[0].backend: Invalid value: "": cannot set both resource and service backends`}},
		{"no backend", editIngress(ingress("example.com", "/", prefix), func(i *networkingv1.Ingress) {
			i.Spec.Rules[0].HTTP.Paths[0].Backend = networkingv1.IngressBackend{}
		}), []string{`spec.rules[0].http.paths[0].backend: Invalid value: "": resource or service backend is required`}},
		{"resource without kind", editIngress(ingress("example.com", "/", prefix), func(i *networkingv1.Ingress) {
			i.Spec.Rules[0].HTTP.Paths[0].Backend = networkingv1.IngressBackend{Resource: &corev1.TypedLocalObjectReference{Name: "b"}}
		}), []string{"spec.rules[0].http.paths[0].backend.resource.kind: Required value"}},
		{"no service name", editIngress(ingress("example.com", "/", prefix), func(i *networkingv1.Ingress) {
			i.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name = ""
		}), []string{"spec.rules[0].http.paths[0].backend.service.name: Required value"}},
		{"tls", editIngress(ingress("example.com", "/", prefix), func(i *networkingv1.Ingress) {
			i.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"*.example.com", "Bad_Host"}, SecretName: "tls-cert"}}
		}), []string{`spec.tls[0].hosts[1]: Invalid value: "Bad_Host": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`}},
		{"class and annotation disagree", editIngress(ingress("example.com", "/", prefix), func(i *networkingv1.Ingress) {
			i.Spec.IngressClassName = ptr("nginx")
			i.Annotations = map[string]string{"kubernetes.io/ingress.class": "traefik"}
		}), []string{`annotations.kubernetes.io/ingress.class: Invalid value: "traefik": must match ` + "`ingressClassName`" + ` when both are specified`}},
	})
}

func TestIngressStatus(t *testing.T) {
	st := Ingresses()
	old := ingress("example.com", "/", networkingv1.PathTypePrefix)
	old.Generation = 1
	old.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "10.0.0.1"}}

	// A write through the main resource keeps the status and bumps the generation on spec changes.
	upd := old.DeepCopy()
	upd.Status = networkingv1.IngressStatus{}
	upd.Spec.Rules[0].Host = "example.org"
	st.PrepareForUpdate(upd, old)
	if len(upd.Status.LoadBalancer.Ingress) != 1 || upd.Generation != 2 {
		t.Errorf("main write: status %+v, generation %d", upd.Status, upd.Generation)
	}
	// A status write keeps the spec.
	sw := old.DeepCopy()
	sw.Spec.Rules = nil
	sw.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{Hostname: "lb.example.com"}}
	out := st.PrepareForStatusUpdate(sw, old).(*networkingv1.Ingress)
	if diff := cmp.Diff(old.Spec, out.Spec); diff != "" || out.Status.LoadBalancer.Ingress[0].Hostname != "lb.example.com" {
		t.Errorf("status write: spec diff %s, status %+v", diff, out.Status)
	}
	// Create clears the status.
	c := old.DeepCopy()
	st.PrepareForCreate(c)
	if len(c.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("create kept status %+v", c.Status)
	}
}

func ingressClass(controller string) *networkingv1.IngressClass {
	return &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "nginx"}, Spec: networkingv1.IngressClassSpec{Controller: controller}}
}

func TestIngressClassValidation(t *testing.T) {
	runValidation(t, IngressClasses(), []validationCase{
		{"valid", ingressClass("k8s.io/ingress-nginx"), nil},
		{"no controller", ingressClass(""), []string{"spec.controller: Required value"}},
		{"not domain prefixed", ingressClass("nginx"), []string{`spec.controller: Invalid value: "nginx": must be a domain-prefixed path (such as "acme.io/foo")`}},
		{"cluster parameters", func() runtime.Object {
			c := ingressClass("k8s.io/ingress-nginx")
			c.Spec.Parameters = &networkingv1.IngressClassParametersReference{APIGroup: ptr("k8s.example.com"), Kind: "IngressParameters", Name: "external-lb"}
			return c
		}(), nil},
		{"namespace scope without namespace", func() runtime.Object {
			c := ingressClass("k8s.io/ingress-nginx")
			c.Spec.Parameters = &networkingv1.IngressClassParametersReference{Kind: "P", Name: "p", Scope: ptr("Namespace")}
			return c
		}(), []string{"spec.parameters.namespace: Required value: `parameters.scope` is set to 'Namespace'"}},
		{"cluster scope with namespace", func() runtime.Object {
			c := ingressClass("k8s.io/ingress-nginx")
			c.Spec.Parameters = &networkingv1.IngressClassParametersReference{Kind: "P", Name: "p", Namespace: ptr("x")}
			return c
		}(), []string{"spec.parameters.namespace: Forbidden: `parameters.scope` is set to 'Cluster'"}},
	})
	st := IngressClasses()
	c := ingressClass("k8s.io/ingress-nginx")
	c.Spec.Parameters = &networkingv1.IngressClassParametersReference{Kind: "P", Name: "p"}
	st.Default(c)
	if c.Spec.Parameters.Scope == nil || *c.Spec.Parameters.Scope != "Cluster" {
		t.Errorf("scope not defaulted: %v", c.Spec.Parameters.Scope)
	}
	c.ResourceVersion = "1"
	moved := c.DeepCopy()
	moved.Spec.Controller = "example.com/other"
	if got := errorStrings(st.ValidateUpdate(moved, c)); !cmp.Equal(got, []string{`spec.controller: Invalid value: "example.com/other": field is immutable`}) {
		t.Errorf("controller change: %v", got)
	}
}

func TestNetworkPolicyDefaults(t *testing.T) {
	st := NetworkPolicies()
	port := intstr.FromInt32(80)
	np := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "np", Namespace: "default"},
		Spec: networkingv1.NetworkPolicySpec{
			Ingress: []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{Port: &port}}}},
		},
	}
	st.Default(np)
	if diff := cmp.Diff([]networkingv1.PolicyType{"Ingress"}, np.Spec.PolicyTypes); diff != "" {
		t.Errorf("policyTypes (-want +got):\n%s", diff)
	}
	if p := np.Spec.Ingress[0].Ports[0].Protocol; p == nil || *p != corev1.ProtocolTCP {
		t.Errorf("protocol %v", p)
	}
	withEgress := &networkingv1.NetworkPolicy{Spec: networkingv1.NetworkPolicySpec{Egress: []networkingv1.NetworkPolicyEgressRule{{}}}}
	st.Default(withEgress)
	if diff := cmp.Diff([]networkingv1.PolicyType{"Ingress", "Egress"}, withEgress.Spec.PolicyTypes); diff != "" {
		t.Errorf("policyTypes with egress (-want +got):\n%s", diff)
	}
	egressOnly := &networkingv1.NetworkPolicy{Spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{"Egress"}}}
	st.Default(egressOnly)
	if diff := cmp.Diff([]networkingv1.PolicyType{"Egress"}, egressOnly.Spec.PolicyTypes); diff != "" {
		t.Errorf("explicit policyTypes changed (-want +got):\n%s", diff)
	}
}

func netpol(peers ...networkingv1.NetworkPolicyPeer) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "np", Namespace: "default"},
		Spec:       networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{{From: peers}}},
	}
}

func TestNetworkPolicyValidation(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
	named := intstr.FromString("http")
	p80 := intstr.FromInt32(80)
	runValidation(t, NetworkPolicies(), []validationCase{
		{"valid", netpol(networkingv1.NetworkPolicyPeer{PodSelector: sel, NamespaceSelector: sel},
			networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/16", Except: []string{"10.0.1.0/24"}}}), nil},
		{"empty peer", netpol(networkingv1.NetworkPolicyPeer{}), []string{"spec.ingress[0].from[0]: Required value: must specify a peer"}},
		{"ipBlock and selector", netpol(networkingv1.NetworkPolicyPeer{PodSelector: sel, IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8"}}),
			[]string{"spec.ingress[0].from[0]: Forbidden: may not specify both ipBlock and another peer"}},
		{"no cidr", netpol(networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{}}), []string{"spec.ingress[0].from[0].ipBlock.cidr: Required value"}},
		{"bad cidr", netpol(networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0"}}),
			[]string{`spec.ingress[0].from[0].ipBlock.cidr: Invalid value: "10.0.0.0": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)`}},
		{"except outside", netpol(networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/16", Except: []string{"10.1.0.0/24", "10.0.0.0/16"}}}), []string{
			"spec.ingress[0].from[0].ipBlock.except[0]: Invalid value: \"10.1.0.0/24\": must be a strict subset of `cidr`",
			"spec.ingress[0].from[0].ipBlock.except[1]: Invalid value: \"10.0.0.0/16\": must be a strict subset of `cidr`",
		}},
		{"ports", func() runtime.Object {
			np := netpol()
			np.Spec.Ingress[0].Ports = []networkingv1.NetworkPolicyPort{
				{Protocol: ptr(corev1.Protocol("ICMP"))},
				{Port: &named, EndPort: ptr[int32](90)},
				{Port: &p80, EndPort: ptr[int32](70)},
			}
			return np
		}(), []string{
			`spec.ingress[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP"`,
			"spec.ingress[0].ports[1].endPort: Invalid value: 90: may not be specified when `port` is non-numeric",
			"spec.ingress[0].ports[2].endPort: Invalid value: 70: must be greater than or equal to `port`",
		}},
		{"bad policy type", func() runtime.Object {
			np := netpol()
			np.Spec.PolicyTypes = []networkingv1.PolicyType{"Sideways"}
			return np
		}(), []string{`spec.policyTypes[0]: Unsupported value: "Sideways": supported values: "Ingress", "Egress"`}},
	})
}

func TestIngressStatusValidation(t *testing.T) {
	st := Ingresses()
	old := ingress("example.com", "/", networkingv1.PathTypePrefix)
	old.ResourceVersion = "3"
	w := old.DeepCopy()
	w.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "10.0.0.300"}, {Hostname: "10.0.0.1"}, {IP: "10.0.0.1", Hostname: "lb.example.com"}}
	out := st.PrepareForStatusUpdate(w, old)
	want := []string{
		`status.loadBalancer.ingress[0].ip: Invalid value: "10.0.0.300": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`,
		`status.loadBalancer.ingress[1].hostname: Invalid value: "10.0.0.1": must be a DNS name, not an IP address`,
	}
	if diff := cmp.Diff(want, errorStrings(st.ValidateUpdate(out, old))); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

func TestCSRSignerNameFieldSelector(t *testing.T) {
	st := CertificateSigningRequests()
	_, fs, err := st.GetAttrs(csr(t))
	if err != nil {
		t.Fatal(err)
	}
	if fs["spec.signerName"] != "kubernetes.io/kube-apiserver-client" {
		t.Errorf("fields %v", fs)
	}
}
