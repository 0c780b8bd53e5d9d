package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func service(name string, ports ...int32) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": name}},
	}
	for i, p := range ports {
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "p" + string(rune('a'+i)), Port: p})
	}
	return s
}

// messages renders errs as kube-apiserver prints each cause.
func messages(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

func TestServiceDefaults(t *testing.T) {
	st := Services()
	tests := []struct {
		name  string
		svc   func() *corev1.Service
		check func(t *testing.T, s *corev1.Service)
	}{{
		name: "ClusterIP",
		svc:  func() *corev1.Service { return service("web", 80) },
		check: func(t *testing.T, s *corev1.Service) {
			want := corev1.ServiceSpec{
				Type:                  corev1.ServiceTypeClusterIP,
				SessionAffinity:       corev1.ServiceAffinityNone,
				Ports:                 []corev1.ServicePort{{Name: "pa", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(80)}},
				Selector:              map[string]string{"app": "web"},
				IPFamilyPolicy:        ptr(corev1.IPFamilyPolicySingleStack),
				IPFamilies:            []corev1.IPFamily{corev1.IPv4Protocol},
				InternalTrafficPolicy: ptr(corev1.ServiceInternalTrafficPolicyCluster),
			}
			if diff := cmp.Diff(want, s.Spec); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
		},
	}, {
		name: "LoadBalancer with ClientIP affinity and a named target port",
		svc: func() *corev1.Service {
			s := service("lb", 443)
			s.Spec.Type = corev1.ServiceTypeLoadBalancer
			s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			s.Spec.Ports[0].TargetPort = intstr.FromString("https")
			s.Spec.Ports[0].Protocol = corev1.ProtocolUDP
			return s
		},
		check: func(t *testing.T, s *corev1.Service) {
			if s.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster {
				t.Errorf("externalTrafficPolicy %q", s.Spec.ExternalTrafficPolicy)
			}
			if s.Spec.AllocateLoadBalancerNodePorts == nil || !*s.Spec.AllocateLoadBalancerNodePorts {
				t.Error("allocateLoadBalancerNodePorts not true")
			}
			if c := s.Spec.SessionAffinityConfig; c == nil || c.ClientIP == nil || *c.ClientIP.TimeoutSeconds != 10800 {
				t.Errorf("sessionAffinityConfig %+v", c)
			}
			if p := s.Spec.Ports[0]; p.TargetPort != intstr.FromString("https") || p.Protocol != corev1.ProtocolUDP {
				t.Errorf("port %+v", p)
			}
		},
	}, {
		name: "NodePort",
		svc:  func() *corev1.Service { s := service("np", 80); s.Spec.Type = corev1.ServiceTypeNodePort; return s },
		check: func(t *testing.T, s *corev1.Service) {
			if s.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster || s.Spec.AllocateLoadBalancerNodePorts != nil {
				t.Errorf("spec %+v", s.Spec)
			}
		},
	}, {
		name: "ExternalName has no families",
		svc: func() *corev1.Service {
			return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ext", Namespace: "default"},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"}}
		},
		check: func(t *testing.T, s *corev1.Service) {
			if s.Spec.IPFamilyPolicy != nil || s.Spec.IPFamilies != nil || s.Spec.InternalTrafficPolicy != nil || s.Spec.ExternalTrafficPolicy != "" {
				t.Errorf("spec %+v", s.Spec)
			}
		},
	}, {
		name: "headless with a selector is single-stack",
		svc:  func() *corev1.Service { s := service("h", 80); s.Spec.ClusterIP = "None"; return s },
		check: func(t *testing.T, s *corev1.Service) {
			if *s.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack || len(s.Spec.ClusterIPs) != 1 || s.Spec.ClusterIPs[0] != "None" {
				t.Errorf("spec %+v", s.Spec)
			}
		},
	}, {
		name: "headless without a selector requires dual-stack",
		svc: func() *corev1.Service {
			s := service("h", 80)
			s.Spec.ClusterIP = "None"
			s.Spec.Selector = nil
			return s
		},
		check: func(t *testing.T, s *corev1.Service) {
			if *s.Spec.IPFamilyPolicy != corev1.IPFamilyPolicyRequireDualStack || s.Spec.IPFamilies[0] != corev1.IPv4Protocol {
				t.Errorf("spec %+v", s.Spec)
			}
		},
	}, {
		name: "clusterIPs fills clusterIP",
		svc:  func() *corev1.Service { s := service("c", 80); s.Spec.ClusterIPs = []string{"10.96.0.9"}; return s },
		check: func(t *testing.T, s *corev1.Service) {
			if s.Spec.ClusterIP != "10.96.0.9" {
				t.Errorf("clusterIP %q", s.Spec.ClusterIP)
			}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.svc()
			st.Default(s)
			tt.check(t, s)
			if errs := st.Validate(s); len(errs) > 0 {
				t.Errorf("defaulted service invalid: %v", errs)
			}
		})
	}
}

func TestServiceValidation(t *testing.T) {
	st := Services()
	tests := []struct {
		name   string
		mutate func(*corev1.Service)
		want   []string
	}{
		{"valid", func(*corev1.Service) {}, nil},
		{"no ports", func(s *corev1.Service) { s.Spec.Ports = nil }, []string{"spec.ports: Required value"}},
		{"headless needs no ports", func(s *corev1.Service) {
			s.Spec.Ports = nil
			s.Spec.ClusterIP = "None"
			s.Spec.ClusterIPs = []string{"None"}
		}, nil},
		{"name not a DNS-1035 label", func(s *corev1.Service) { s.Name = "1web" }, []string{
			`metadata.name: Invalid value: "1web": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`,
		}},
		{"port out of range", func(s *corev1.Service) { s.Spec.Ports[0].Port = 70000 }, []string{
			"spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive",
		}},
		{"port zero", func(s *corev1.Service) { s.Spec.Ports[0].Port = 0; s.Spec.Ports[0].TargetPort = intstr.FromInt32(80) }, []string{
			"spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
		}},
		{"names required with several ports", func(s *corev1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(443)})
		}, []string{"spec.ports[1].name: Required value"}},
		{"duplicate names", func(s *corev1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "pa", Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(443)})
		}, []string{`spec.ports[1].name: Duplicate value: "pa"`}},
		{"bad port name", func(s *corev1.Service) { s.Spec.Ports[0].Name = "HTTP_1" }, []string{
			`spec.ports[0].name: Invalid value: "HTTP_1": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
		}},
		{"duplicate port and protocol", func(s *corev1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "pb", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)})
		}, []string{`spec.ports[1]: Duplicate value: {"protocol":"TCP","port":80,"targetPort":0}`}},
		{"same port, other protocol", func(s *corev1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "pb", Port: 80, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(80)})
		}, nil},
		{"bad protocol", func(s *corev1.Service) { s.Spec.Ports[0].Protocol = "ICMP" }, []string{
			`spec.ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"`,
		}},
		{"target port out of range", func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromInt32(65536) }, []string{
			"spec.ports[0].targetPort: Invalid value: 65536: must be between 1 and 65535, inclusive",
		}},
		{"target port bad name", func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromString("my_port") }, []string{
			`spec.ports[0].targetPort: Invalid value: "my_port": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)`,
		}},
		{"bad type", func(s *corev1.Service) { s.Spec.Type = "Internal" }, []string{
			`spec.type: Unsupported value: "Internal": supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort"`,
		}},
		{"node port on ClusterIP", func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 30080 }, []string{
			"spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'",
		}},
		{"duplicate node ports", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeNodePort
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
			s.Spec.Ports[0].NodePort = 30080
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "pb", Port: 81, NodePort: 30080, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(81)})
		}, []string{"spec.ports[1].nodePort: Duplicate value: 30080"}},
		{"headless NodePort", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeNodePort
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
			s.Spec.ClusterIP, s.Spec.ClusterIPs = "None", []string{"None"}
		}, []string{`spec.clusterIPs[0]: Invalid value: ["None"]: may not be set to 'None' for NodePort services`}},
		{"headless LoadBalancer", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeLoadBalancer
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
			s.Spec.AllocateLoadBalancerNodePorts = ptr(true)
			s.Spec.ClusterIP, s.Spec.ClusterIPs = "None", []string{"None"}
		}, []string{`spec.clusterIPs[0]: Invalid value: ["None"]: may not be set to 'None' for LoadBalancer services`}},
		{"bad cluster IP", func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.0.300", []string{"10.96.0.300"} }, []string{
			`spec.clusterIPs[0]: Invalid value: "10.96.0.300": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`,
		}},
		{"clusterIP and clusterIPs disagree", func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.0.5", []string{"10.96.0.6"} }, []string{
			"spec.clusterIPs: Invalid value: [\"10.96.0.6\"]: first value must match `clusterIP`",
		}},
		{"bad selector", func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "a b"} }, []string{
			`spec.selector: Invalid value: "a b": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
		}},
		{"bad affinity", func(s *corev1.Service) { s.Spec.SessionAffinity = "Cookie" }, []string{
			`spec.sessionAffinity: Unsupported value: "Cookie": supported values: "ClientIP", "None"`,
		}},
		{"affinity timeout too long", func(s *corev1.Service) {
			s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr[int32](86401)}}
		}, []string{"spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 86401: must be greater than 0 and less than 86400"}},
		{"affinity config with None", func(s *corev1.Service) {
			s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr[int32](10)}}
		}, []string{"spec.sessionAffinityConfig: Forbidden: must not be set when session affinity is None"}},
		{"externalTrafficPolicy on ClusterIP", func(s *corev1.Service) { s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal }, []string{
			`spec.externalTrafficPolicy: Invalid value: "Local": may only be set for externally-accessible services`,
		}},
		{"bad load balancer status", func(s *corev1.Service) {
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "1.2.3"}, {Hostname: "10.0.0.1"}}
		}, []string{
			`status.loadBalancer.ingress[0].ip: Invalid value: "1.2.3": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`,
			"status.loadBalancer.ingress[0].ipMode: Required value: must be specified when `ip` is set",
			`status.loadBalancer.ingress[1].hostname: Invalid value: "10.0.0.1": must be a DNS name, not an IP address`,
		}},
		{"ipMode without ip", func(s *corev1.Service) {
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{Hostname: "lb.example.com", IPMode: ptr(corev1.LoadBalancerIPModeProxy)}}
		}, []string{"status.loadBalancer.ingress[0].ipMode: Forbidden: may not be specified when `ip` is not set"}},
		{"ExternalName", func(s *corev1.Service) {
			*s = corev1.Service{ObjectMeta: s.ObjectMeta, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com.", SessionAffinity: corev1.ServiceAffinityNone}}
		}, nil},
		{"ExternalName needs a name", func(s *corev1.Service) {
			*s = corev1.Service{ObjectMeta: s.ObjectMeta, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, SessionAffinity: corev1.ServiceAffinityNone}}
		}, []string{"spec.externalName: Required value"}},
		{"ExternalName bad name and a cluster IP", func(s *corev1.Service) {
			*s = corev1.Service{ObjectMeta: s.ObjectMeta, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "Not_A_Host",
				ClusterIP: "10.96.0.5", ClusterIPs: []string{"10.96.0.5"}, SessionAffinity: corev1.ServiceAffinityNone}}
		}, []string{
			"spec.clusterIPs: Forbidden: may not be set for ExternalName services",
			`spec.externalName: Invalid value: "Not_A_Host": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := service("web", 80)
			st.Default(s)
			tt.mutate(s)
			if diff := cmp.Diff(tt.want, messages(st.Validate(s))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func stored(s *corev1.Service) *corev1.Service {
	Services().Default(s)
	return s
}

func TestServiceUpdate(t *testing.T) {
	st := Services()
	old := stored(service("web", 80, 443))
	old.Spec.Type = corev1.ServiceTypeNodePort
	old.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	old.Spec.ClusterIP, old.Spec.ClusterIPs = "10.96.0.10", []string{"10.96.0.10"}
	old.Spec.Ports[0].NodePort, old.Spec.Ports[1].NodePort = 30080, 30443
	old.ResourceVersion = "5"

	t.Run("omitted allocations are kept", func(t *testing.T) {
		s := stored(service("web", 80, 443))
		s.Spec.Type = corev1.ServiceTypeNodePort
		s.ResourceVersion = "5"
		st.Default(s)
		st.PrepareForUpdate(s, old)
		if s.Spec.ClusterIP != "10.96.0.10" || s.Spec.Ports[0].NodePort != 30080 || s.Spec.Ports[1].NodePort != 30443 {
			t.Fatalf("spec %+v", s.Spec)
		}
		if errs := st.ValidateUpdate(s, old); len(errs) > 0 {
			t.Fatal(errs)
		}
	})
	t.Run("clusterIP is immutable", func(t *testing.T) {
		s := old.DeepCopy()
		s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.0.11", []string{"10.96.0.11"}
		st.PrepareForUpdate(s, old)
		want := []string{`spec.clusterIPs[0]: Invalid value: "10.96.0.11": may not change once set`}
		if diff := cmp.Diff(want, messages(st.ValidateUpdate(s, old))); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("to ClusterIP drops node ports and the external policy", func(t *testing.T) {
		s := old.DeepCopy()
		s.Spec.Type = corev1.ServiceTypeClusterIP
		st.PrepareForUpdate(s, old)
		if s.Spec.Ports[0].NodePort != 0 || s.Spec.Ports[1].NodePort != 0 || s.Spec.ExternalTrafficPolicy != "" || s.Spec.ClusterIP != "10.96.0.10" {
			t.Fatalf("spec %+v", s.Spec)
		}
		if errs := st.ValidateUpdate(s, old); len(errs) > 0 {
			t.Fatal(errs)
		}
	})
	t.Run("to ExternalName drops the addresses", func(t *testing.T) {
		s := old.DeepCopy()
		s.Spec.Type = corev1.ServiceTypeExternalName
		s.Spec.ExternalName = "example.com"
		st.Default(s)
		st.PrepareForUpdate(s, old)
		if s.Spec.ClusterIP != "" || s.Spec.ClusterIPs != nil || s.Spec.IPFamilies != nil || s.Spec.IPFamilyPolicy != nil || s.Spec.Ports[0].NodePort != 0 {
			t.Fatalf("spec %+v", s.Spec)
		}
		if errs := st.ValidateUpdate(s, old); len(errs) > 0 {
			t.Fatal(errs)
		}
	})
	t.Run("status writes keep the spec, spec writes keep the status", func(t *testing.T) {
		withStatus := old.DeepCopy()
		withStatus.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "1.2.3.4"}}
		s := withStatus.DeepCopy()
		s.Spec.Selector = map[string]string{"app": "other"}
		s.Status.LoadBalancer.Ingress = nil
		out := st.PrepareForStatusUpdate(s, withStatus).(*corev1.Service)
		if out.Spec.Selector["app"] != "web" || len(out.Status.LoadBalancer.Ingress) != 0 {
			t.Errorf("status write kept %v, status %+v", out.Spec.Selector, out.Status)
		}
		u := withStatus.DeepCopy()
		u.Status = corev1.ServiceStatus{}
		st.PrepareForUpdate(u, withStatus)
		if len(u.Status.LoadBalancer.Ingress) != 1 {
			t.Errorf("spec write dropped the status")
		}
		c := withStatus.DeepCopy()
		st.PrepareForCreate(c)
		if len(c.Status.LoadBalancer.Ingress) != 0 {
			t.Errorf("create kept the status")
		}
	})
}

func TestServiceInfoAndFields(t *testing.T) {
	info := Services().Info()
	if info.Resource != "services" || !info.Namespaced || !info.Status || info.ShortNames[0] != "svc" || info.Categories[0] != "all" {
		t.Errorf("info %+v", info)
	}
	s := stored(service("web", 80))
	s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.0.10", []string{"10.96.0.10"}
	_, fs, err := Services().GetAttrs(s)
	if err != nil {
		t.Fatal(err)
	}
	want := fields.Set{"metadata.name": "web", "metadata.namespace": "default", "spec.clusterIP": "10.96.0.10", "spec.type": "ClusterIP"}
	if diff := cmp.Diff(want, fs); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
}
