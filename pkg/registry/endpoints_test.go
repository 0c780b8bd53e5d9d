//lint:file-ignore SA1019 core/v1 Endpoints is deprecated but served, as kube-apiserver 1.37 still serves it
package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func endpoints() *corev1.Endpoints {
	return &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: "10.0.0.1"}},
			Ports:     []corev1.EndpointPort{{Name: "http", Port: 80}},
		}},
	}
}

func TestEndpointsValidation(t *testing.T) {
	st := Endpoints()
	tests := []struct {
		name   string
		mutate func(*corev1.Endpoints)
		want   []string
	}{
		{"valid", func(*corev1.Endpoints) {}, nil},
		{"empty subsets", func(e *corev1.Endpoints) { e.Subsets = nil }, nil},
		{"subset without addresses", func(e *corev1.Endpoints) { e.Subsets[0].Addresses = nil }, []string{
			"subsets[0]: Required value: must specify `addresses` or `notReadyAddresses`",
		}},
		{"bad IP", func(e *corev1.Endpoints) { e.Subsets[0].Addresses[0].IP = "10.0.0" }, []string{
			`subsets[0].addresses[0].ip: Invalid value: "10.0.0": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`,
		}},
		{"loopback", func(e *corev1.Endpoints) {
			e.Subsets[0].NotReadyAddresses = []corev1.EndpointAddress{{IP: "127.0.0.1"}}
		}, []string{
			`subsets[0].notReadyAddresses[0].ip: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)`,
		}},
		{"link-local", func(e *corev1.Endpoints) { e.Subsets[0].Addresses[0].IP = "169.254.1.1" }, []string{
			`subsets[0].addresses[0].ip: Invalid value: "169.254.1.1": may not be in the link-local range (169.254.0.0/16, fe80::/10)`,
		}},
		{"port out of range", func(e *corev1.Endpoints) { e.Subsets[0].Ports[0].Port = 0 }, []string{
			"subsets[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
		}},
		{"names required with several ports", func(e *corev1.Endpoints) {
			e.Subsets[0].Ports = append(e.Subsets[0].Ports, corev1.EndpointPort{Port: 443, Protocol: corev1.ProtocolTCP})
		}, []string{"subsets[0].ports[1].name: Required value"}},
		{"bad protocol", func(e *corev1.Endpoints) { e.Subsets[0].Ports[0].Protocol = "HTTP" }, []string{
			`subsets[0].ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"`,
		}},
		{"bad hostname", func(e *corev1.Endpoints) { e.Subsets[0].Addresses[0].Hostname = "A.b" }, []string{
			`subsets[0].addresses[0].hostname: Invalid value: "A.b": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := endpoints()
			st.Default(e)
			tt.mutate(e)
			if diff := cmp.Diff(tt.want, messages(st.Validate(e))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
	e := endpoints()
	st.Default(e)
	if e.Subsets[0].Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("protocol not defaulted: %q", e.Subsets[0].Ports[0].Protocol)
	}
	if info := st.Info(); info.ShortNames[0] != "ep" || !info.Namespaced || info.Status {
		t.Errorf("info %+v", info)
	}
}

func slice() *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-abc", Namespace: "default", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr[int32](80)}},
	}
}

func TestEndpointSliceValidation(t *testing.T) {
	st := EndpointSlices()
	tests := []struct {
		name   string
		mutate func(*discoveryv1.EndpointSlice)
		want   []string
	}{
		{"valid", func(*discoveryv1.EndpointSlice) {}, nil},
		{"no address type", func(s *discoveryv1.EndpointSlice) { s.AddressType = "" }, []string{"addressType: Required value"}},
		{"bad address type", func(s *discoveryv1.EndpointSlice) { s.AddressType = "IP" }, []string{
			`addressType: Unsupported value: "IP": supported values: "FQDN", "IPv4", "IPv6"`,
		}},
		{"IPv6 address in an IPv4 slice", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses[0] = "fd00::1" }, []string{
			`endpoints[0].addresses[0]: Invalid value: "fd00::1": must be an IPv4 address`,
		}},
		{"no addresses", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = nil }, []string{
			"endpoints[0].addresses: Required value: must contain at least 1 address",
		}},
		{"FQDN", func(s *discoveryv1.EndpointSlice) {
			s.AddressType = discoveryv1.AddressTypeFQDN
			s.Endpoints[0].Addresses[0] = "db.example.com"
		}, nil},
		{"duplicate port names", func(s *discoveryv1.EndpointSlice) {
			s.Ports = append(s.Ports, discoveryv1.EndpointPort{Name: ptr("http"), Port: ptr[int32](81), Protocol: ptr(corev1.ProtocolTCP)})
		}, []string{`ports[1].name: Duplicate value: "http"`}},
		{"port out of range", func(s *discoveryv1.EndpointSlice) { s.Ports[0].Port = ptr[int32](70000) }, []string{
			"ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := slice()
			st.Default(s)
			tt.mutate(s)
			if diff := cmp.Diff(tt.want, messages(st.Validate(s))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
	old := slice()
	st.Default(old)
	old.ResourceVersion = "3"
	s := old.DeepCopy()
	s.AddressType = discoveryv1.AddressTypeFQDN
	s.Endpoints[0].Addresses[0] = "db.example.com"
	want := []string{`addressType: Invalid value: "FQDN": field is immutable`}
	if diff := cmp.Diff(want, messages(st.ValidateUpdate(s, old))); diff != "" {
		t.Errorf("immutable addressType (-want +got):\n%s", diff)
	}
}
