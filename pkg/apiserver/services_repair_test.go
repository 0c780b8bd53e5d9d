package apiserver

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestServiceRepairReleasesLeaks(t *testing.T) {
	e := newTestEnv(t)
	kept := e.createService(testService("kept", corev1.ServiceTypeNodePort, 80))
	alloc := e.server.lookup(servicesGVR).hook.(*serviceAllocator)
	ctx := context.Background()
	// Claims left by a server that stopped before storing its Service.
	gone := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: "default"}}
	if err := alloc.createIPAddress(ctx, alloc.ipAt(77), gone); err != nil {
		t.Fatal(err)
	}
	if err := alloc.createPortClaim(ctx, 31777, gone); err != nil {
		t.Fatal(err)
	}
	// An IPAddress another allocator manages is left alone.
	other := &networkingv1.IPAddress{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "IPAddress"},
		ObjectMeta: metav1.ObjectMeta{Name: "192.168.0.9"},
		Spec:       networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{Group: "gateway.networking.k8s.io", Resource: "gateways", Name: "gw"}},
	}
	e.mustCreate("/apis/networking.k8s.io/v1/ipaddresses", other, nil)

	suspects := alloc.repair(ctx, nil)
	if len(suspects) != 2 || !suspects["ip/10.96.0.77"] || !suspects["port/31777"] {
		t.Fatalf("suspects %v", suspects)
	}
	if e.ipAddress("10.96.0.77") == nil {
		t.Fatal("released on the first pass")
	}
	alloc.repair(ctx, suspects)
	if e.ipAddress("10.96.0.77") != nil {
		t.Error("leaked IPAddress kept")
	}
	claims := e.nodePortClaims()
	if len(claims) != 1 || claims[0] != "" && claims[0][len(claims[0])-4:] != "kept" {
		t.Errorf("node port claims %v", claims)
	}
	if e.ipAddress(kept.Spec.ClusterIP) == nil || e.ipAddress("192.168.0.9") == nil {
		t.Error("repair released a held claim")
	}
}
