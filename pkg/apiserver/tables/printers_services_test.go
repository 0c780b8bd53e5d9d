//lint:file-ignore SA1019 core/v1 Endpoints is deprecated but served, as kube-apiserver 1.37 still serves it
package tables

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func convertRow(t *testing.T, obj runtime.Object) (*metav1.Table, []any) {
	t.Helper()
	tb, err := Convert(obj, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(tb.Rows) != 1 {
		t.Fatalf("%d rows", len(tb.Rows))
	}
	return tb, tb.Rows[0].Cells
}

func TestServiceRow(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "web", Namespace: "default", CreationTimestamp: ago(90 * time.Second)}
	tests := []struct {
		name string
		svc  corev1.Service
		want []any
	}{{
		name: "ClusterIP",
		svc: corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.10", ClusterIPs: []string{"10.96.0.10"},
			Selector: map[string]string{"app": "web", "tier": "front"},
			Ports:    []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}, {Port: 53, Protocol: corev1.ProtocolUDP}},
		}},
		want: []any{"web", "ClusterIP", "10.96.0.10", "<none>", "80/TCP,53/UDP", "90s", "app=web,tier=front"},
	}, {
		name: "NodePort with external IPs",
		svc: corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeNodePort, ClusterIPs: []string{"10.96.0.11"}, ExternalIPs: []string{"1.2.3.4", "5.6.7.8"},
			Ports: []corev1.ServicePort{{Port: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP}, {Port: 443, Protocol: corev1.ProtocolTCP}},
		}},
		want: []any{"web", "NodePort", "10.96.0.11", "1.2.3.4,5.6.7.8", "80:30080/TCP,443/TCP", "90s", "<none>"},
	}, {
		name: "LoadBalancer pending",
		svc: corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, ClusterIPs: []string{"10.96.0.12"},
			Ports: []corev1.ServicePort{{Port: 80, NodePort: 31000, Protocol: corev1.ProtocolTCP}},
		}},
		want: []any{"web", "LoadBalancer", "10.96.0.12", "<pending>", "80:31000/TCP", "90s", "<none>"},
	}, {
		name: "LoadBalancer with ingress",
		svc: corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, ClusterIPs: []string{"10.96.0.12"}, ExternalIPs: []string{"9.9.9.9"},
		}, Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "203.0.113.7"}, {Hostname: "lb.example.com"}}}}},
		want: []any{"web", "LoadBalancer", "10.96.0.12", "203.0.113.7,lb.example.com,9.9.9.9", "<none>", "90s", "<none>"},
	}, {
		name: "ExternalName",
		svc:  corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com"}},
		want: []any{"web", "ExternalName", "<none>", "db.example.com", "<none>", "90s", "<none>"},
	}, {
		name: "headless",
		svc: corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, ClusterIP: "None", ClusterIPs: []string{"None"},
			Ports: []corev1.ServicePort{{Port: 5432, Protocol: corev1.ProtocolTCP}},
		}},
		want: []any{"web", "ClusterIP", "None", "<none>", "5432/TCP", "90s", "<none>"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb, cells := convertRow(t, &tt.svc)
			if diff := cmp.Diff([]string{"Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector*"}, columnNames(tb.ColumnDefinitions)); diff != "" {
				t.Errorf("columns (-want +got):\n%s", diff)
			}
			if tb.ColumnDefinitions[6].Priority != 1 {
				t.Error("Selector is not a wide column")
			}
			if diff := cmp.Diff(tt.want, cells); diff != "" {
				t.Errorf("cells (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEndpointsRow(t *testing.T) {
	addrs := func(ips ...string) []corev1.EndpointAddress {
		var out []corev1.EndpointAddress
		for _, ip := range ips {
			out = append(out, corev1.EndpointAddress{IP: ip})
		}
		return out
	}
	tests := []struct {
		name    string
		subsets []corev1.EndpointSubset
		want    string
	}{
		{"none", nil, "<none>"},
		{"two", []corev1.EndpointSubset{{Addresses: addrs("10.0.0.1", "10.0.0.2"), Ports: []corev1.EndpointPort{{Port: 80}}}}, "10.0.0.1:80,10.0.0.2:80"},
		{"more", []corev1.EndpointSubset{{Addresses: addrs("10.0.0.1", "10.0.0.2"), Ports: []corev1.EndpointPort{{Port: 80}, {Port: 443}}}}, "10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 1 more..."},
		{"no ports", []corev1.EndpointSubset{{Addresses: addrs("10.0.0.1")}}, "10.0.0.1"},
		{"IPv6", []corev1.EndpointSubset{{Addresses: addrs("fd00::1"), Ports: []corev1.EndpointPort{{Port: 80}}}}, "[fd00::1]:80"},
		{"only not ready", []corev1.EndpointSubset{{NotReadyAddresses: addrs("10.0.0.9"), Ports: []corev1.EndpointPort{{Port: 80}}}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "web", CreationTimestamp: ago(time.Hour)}, Subsets: tt.subsets}
			tb, cells := convertRow(t, e)
			if diff := cmp.Diff([]string{"Name", "Endpoints", "Age"}, columnNames(tb.ColumnDefinitions)); diff != "" {
				t.Errorf("columns: %s", diff)
			}
			if diff := cmp.Diff([]any{"web", tt.want, "60m"}, cells); diff != "" {
				t.Errorf("cells (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEndpointSliceRow(t *testing.T) {
	port, name := int32(8080), "http"
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-abc", CreationTimestamp: ago(2 * time.Minute)},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.0.0.1"}}, {Addresses: []string{"10.0.0.2"}}, {Addresses: []string{"10.0.0.3"}}, {Addresses: []string{"10.0.0.4"}},
		},
		Ports: []discoveryv1.EndpointPort{{Port: &port}, {Name: &name}},
	}
	tb, cells := convertRow(t, s)
	if diff := cmp.Diff([]string{"Name", "AddressType", "Ports", "Endpoints", "Age"}, columnNames(tb.ColumnDefinitions)); diff != "" {
		t.Errorf("columns: %s", diff)
	}
	if diff := cmp.Diff([]any{"web-abc", "IPv4", "8080,http", "10.0.0.1,10.0.0.2,10.0.0.3 + 1 more...", "2m"}, cells); diff != "" {
		t.Errorf("cells (-want +got):\n%s", diff)
	}
	empty := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "e", CreationTimestamp: ago(time.Second)}, AddressType: discoveryv1.AddressTypeFQDN}
	_, cells = convertRow(t, empty)
	if diff := cmp.Diff([]any{"e", "FQDN", "<unset>", "<unset>", "1s"}, cells); diff != "" {
		t.Errorf("empty (-want +got):\n%s", diff)
	}
}

func TestServiceCIDRAndIPAddressRows(t *testing.T) {
	c := &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", CreationTimestamp: ago(3 * time.Hour)},
		Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.96.0.0/12", "fd00::/108"}}}
	tb, cells := convertRow(t, c)
	if diff := cmp.Diff([]string{"Name", "CIDRs", "Age"}, columnNames(tb.ColumnDefinitions)); diff != "" {
		t.Errorf("columns: %s", diff)
	}
	if diff := cmp.Diff([]any{"kubernetes", "10.96.0.0/12,fd00::/108", "3h"}, cells); diff != "" {
		t.Errorf("cidr cells: %s", diff)
	}
	a := &networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: "10.96.0.10"},
		Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{Resource: "services", Namespace: "default", Name: "web"}}}
	tb, cells = convertRow(t, a)
	if diff := cmp.Diff([]string{"Name", "ParentRef"}, columnNames(tb.ColumnDefinitions)); diff != "" {
		t.Errorf("columns: %s", diff)
	}
	if diff := cmp.Diff([]any{"10.96.0.10", "services/default/web"}, cells); diff != "" {
		t.Errorf("ip cells: %s", diff)
	}
	a.Spec.ParentRef = &networkingv1.ParentReference{Group: "gateway.networking.k8s.io", Resource: "Gateways", Name: "gw"}
	_, cells = convertRow(t, a)
	if diff := cmp.Diff([]any{"10.96.0.10", "gateways.gateway.networking.k8s.io/gw"}, cells); diff != "" {
		t.Errorf("ip cells: %s", diff)
	}
}

func TestServiceListTable(t *testing.T) {
	list := &corev1.ServiceList{Items: []corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Name: "a", CreationTimestamp: ago(time.Minute)}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIPs: []string{"10.96.0.2"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b", CreationTimestamp: ago(time.Minute)}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIPs: []string{"10.96.0.3"}}},
	}}
	tb, err := Convert(list, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(tb.Rows) != 2 || tb.Rows[1].Cells[2] != "10.96.0.3" {
		t.Errorf("rows %+v", tb.Rows)
	}
}
