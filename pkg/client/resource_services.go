//lint:file-ignore SA1019 core/v1 Endpoints is deprecated but served, as kube-apiserver 1.37 still serves it
package client

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// The typed descriptors of Services and the resources that route to them.
var (
	Services       = Resource[*corev1.Service]{corev1.SchemeGroupVersion.WithResource("services"), "Service", true}
	Endpoints      = Resource[*corev1.Endpoints]{corev1.SchemeGroupVersion.WithResource("endpoints"), "Endpoints", true}
	EndpointSlices = Resource[*discoveryv1.EndpointSlice]{discoveryv1.SchemeGroupVersion.WithResource("endpointslices"), "EndpointSlice", true}
	ServiceCIDRs   = Resource[*networkingv1.ServiceCIDR]{networkingv1.SchemeGroupVersion.WithResource("servicecidrs"), "ServiceCIDR", false}
	IPAddresses    = Resource[*networkingv1.IPAddress]{networkingv1.SchemeGroupVersion.WithResource("ipaddresses"), "IPAddress", false}
)
