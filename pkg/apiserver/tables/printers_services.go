//lint:file-ignore SA1019 core/v1 Endpoints is deprecated but served, as kube-apiserver 1.37 still serves it
package tables

import (
	"fmt"
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// maxListed is how many addresses or ports a cell lists before "+ N more...".
const maxListed = 3

// servicePrinters returns the printers of Services, Endpoints, EndpointSlices, ServiceCIDRs, IPAddresses.
func servicePrinters() map[reflect.Type]*printer {
	out := map[reflect.Type]*printer{}
	add := func(t reflect.Type, p *printer) { out[t] = p }
	add(printerOf(serviceColumns, serviceRow))
	add(printerOf(endpointsColumns, endpointsRow))
	add(printerOf(endpointSliceColumns, endpointSliceRow))
	add(printerOf(serviceCIDRColumns, serviceCIDRRow))
	add(printerOf(ipAddressColumns, ipAddressRow))
	return out
}

func serviceColumns() []metav1.TableColumnDefinition {
	doc := corev1.ServiceSpec{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Type", Type: "string", Description: doc["type"]},
		{Name: "Cluster-IP", Type: "string", Description: doc["clusterIP"]},
		{Name: "External-IP", Type: "string", Description: doc["externalIPs"]},
		{Name: "Port(s)", Type: "string", Description: doc["ports"]},
		ageColumn(),
		{Name: "Selector", Type: "string", Priority: 1, Description: doc["selector"]},
	}
}

func serviceRow(s *corev1.Service, now time.Time) ([]any, []metav1.TableRowCondition) {
	clusterIP := "<none>"
	if len(s.Spec.ClusterIPs) > 0 {
		clusterIP = s.Spec.ClusterIPs[0]
	}
	ports := servicePorts(s.Spec.Ports)
	if ports == "" {
		ports = "<none>"
	}
	return []any{
		s.Name, string(s.Spec.Type), clusterIP, serviceExternalIP(s), ports,
		since(s.CreationTimestamp.Time, now), labels.FormatLabels(s.Spec.Selector),
	}, nil
}

// serviceExternalIP is what kubectl shows as a Service's external address:
// its externalIPs, a LoadBalancer's ingress ("<pending>" before it has
// one), or an ExternalName's name.
func serviceExternalIP(s *corev1.Service) string {
	switch s.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort:
		if len(s.Spec.ExternalIPs) > 0 {
			return strings.Join(s.Spec.ExternalIPs, ",")
		}
		return "<none>"
	case corev1.ServiceTypeLoadBalancer:
		var addrs []string
		for _, in := range s.Status.LoadBalancer.Ingress {
			a := in.IP
			if a == "" {
				a = in.Hostname
			}
			if a != "" && !slices.Contains(addrs, a) {
				addrs = append(addrs, a)
			}
		}
		slices.Sort(addrs)
		addrs = append(addrs, s.Spec.ExternalIPs...)
		if len(addrs) == 0 {
			return "<pending>"
		}
		return strings.Join(addrs, ",")
	case corev1.ServiceTypeExternalName:
		return s.Spec.ExternalName
	}
	return "<unknown>"
}

// servicePorts is "80/TCP" per port, "80:30080/TCP" with a node port.
func servicePorts(ports []corev1.ServicePort) string {
	out := make([]string, len(ports))
	for i, p := range ports {
		if p.NodePort > 0 {
			out[i] = fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol)
		} else {
			out[i] = fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		}
	}
	return strings.Join(out, ",")
}

func endpointsColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Endpoints", Type: "string", Description: corev1.Endpoints{}.SwaggerDoc()["subsets"]},
		ageColumn(),
	}
}

func endpointsRow(e *corev1.Endpoints, now time.Time) ([]any, []metav1.TableRowCondition) {
	return []any{e.Name, endpointsCell(e), since(e.CreationTimestamp.Time, now)}, nil
}

// endpointsCell lists the first ready addresses, each with every port
// ("10.0.0.1:80"), or alone when the subset has no ports.
func endpointsCell(e *corev1.Endpoints) string {
	if len(e.Subsets) == 0 {
		return "<none>"
	}
	var list []string
	count := 0
	for _, ss := range e.Subsets {
		if len(ss.Ports) == 0 {
			count += len(ss.Addresses)
			for _, a := range ss.Addresses {
				if len(list) == maxListed {
					break
				}
				list = append(list, a.IP)
			}
			continue
		}
		for _, p := range ss.Ports {
			count += len(ss.Addresses)
			for _, a := range ss.Addresses {
				if len(list) == maxListed {
					break
				}
				list = append(list, net.JoinHostPort(a.IP, strconv.Itoa(int(p.Port))))
			}
		}
	}
	out := strings.Join(list, ",")
	if count > maxListed {
		return fmt.Sprintf("%s + %d more...", out, count-maxListed)
	}
	return out
}

func endpointSliceColumns() []metav1.TableColumnDefinition {
	doc := discoveryv1.EndpointSlice{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "AddressType", Type: "string", Description: doc["addressType"]},
		{Name: "Ports", Type: "string", Description: doc["ports"]},
		{Name: "Endpoints", Type: "string", Description: doc["endpoints"]},
		ageColumn(),
	}
}

func endpointSliceRow(s *discoveryv1.EndpointSlice, now time.Time) ([]any, []metav1.TableRowCondition) {
	var ports []string
	for _, p := range s.Ports {
		switch {
		case p.Port != nil:
			ports = append(ports, strconv.Itoa(int(*p.Port)))
		case p.Name != nil:
			ports = append(ports, *p.Name)
		default:
			ports = append(ports, "*")
		}
	}
	var addrs []string
	for _, ep := range s.Endpoints {
		addrs = append(addrs, ep.Addresses...)
	}
	return []any{s.Name, string(s.AddressType), listedCell(ports), listedCell(addrs), since(s.CreationTimestamp.Time, now)}, nil
}

// listedCell lists the first values, "<unset>" for none.
func listedCell(values []string) string {
	if len(values) == 0 {
		return "<unset>"
	}
	if len(values) > maxListed {
		return fmt.Sprintf("%s + %d more...", strings.Join(values[:maxListed], ","), len(values)-maxListed)
	}
	return strings.Join(values, ",")
}

func serviceCIDRColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "CIDRs", Type: "string", Description: networkingv1.ServiceCIDRSpec{}.SwaggerDoc()["cidrs"]},
		ageColumn(),
	}
}

func serviceCIDRRow(c *networkingv1.ServiceCIDR, now time.Time) ([]any, []metav1.TableRowCondition) {
	return []any{c.Name, strings.Join(c.Spec.CIDRs, ","), since(c.CreationTimestamp.Time, now)}, nil
}

func ipAddressColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "ParentRef", Type: "string", Description: networkingv1.IPAddressSpec{}.SwaggerDoc()["parentRef"]},
	}
}

// ipAddressRow names the parent as "services/default/web" ("resource.group"
// for a group other than core).
func ipAddressRow(a *networkingv1.IPAddress, _ time.Time) ([]any, []metav1.TableRowCondition) {
	parent := "<none>"
	if ref := a.Spec.ParentRef; ref != nil {
		parent = strings.ToLower(ref.Resource)
		if ref.Group != "" {
			parent += "." + strings.ToLower(ref.Group)
		}
		if ref.Namespace != "" {
			parent += "/" + ref.Namespace
		}
		parent += "/" + ref.Name
	}
	return []any{a.Name, parent}, nil
}
