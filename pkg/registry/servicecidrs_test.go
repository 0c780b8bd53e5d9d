package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestServiceCIDRValidation(t *testing.T) {
	st := ServiceCIDRs()
	tests := []struct {
		name  string
		cidrs []string
		want  []string
	}{
		{"valid", []string{"10.96.0.0/12"}, nil},
		{"dual-stack", []string{"10.96.0.0/12", "fd00::/108"}, nil},
		{"none", nil, []string{"spec.cidrs: Required value: at least one CIDR required"}},
		{"bad", []string{"10.96.0.1/12"}, []string{
			`spec.cidrs[0]: Invalid value: "10.96.0.1/12": must not have bits set beyond the prefix length`,
		}},
		{"two of a family", []string{"10.96.0.0/12", "10.200.0.0/16"}, []string{
			`spec.cidrs: Invalid value: ["10.96.0.0/12","10.200.0.0/16"]: may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes"}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: tt.cidrs}}
			if diff := cmp.Diff(tt.want, messages(st.Validate(c))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
	old := &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", ResourceVersion: "2"}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.96.0.0/12"}}}
	grow := old.DeepCopy()
	grow.Spec.CIDRs = append(grow.Spec.CIDRs, "fd00::/108")
	if errs := st.ValidateUpdate(grow, old); len(errs) > 0 {
		t.Errorf("adding the other family: %v", errs)
	}
	change := old.DeepCopy()
	change.Spec.CIDRs = []string{"10.100.0.0/16"}
	want := []string{`spec.cidrs: Invalid value: ["10.100.0.0/16"]: field is immutable`}
	if diff := cmp.Diff(want, messages(st.ValidateUpdate(change, old))); diff != "" {
		t.Errorf("change (-want +got):\n%s", diff)
	}
	if info := st.Info(); info.Namespaced || !info.Status {
		t.Errorf("info %+v", info)
	}
}

func TestIPAddressValidation(t *testing.T) {
	st := IPAddresses()
	ref := &networkingv1.ParentReference{Resource: "services", Namespace: "default", Name: "web"}
	tests := []struct {
		name string
		ip   string
		ref  *networkingv1.ParentReference
		want []string
	}{
		{"valid", "10.96.0.10", ref, nil},
		{"IPv6", "fd00::a", ref, nil},
		{"not canonical", "fd00:0::a", ref, []string{`metadata.name: Invalid value: "fd00:0::a": must be a canonical format IP address`}},
		{"not an IP", "web", ref, []string{`metadata.name: Invalid value: "web": ParseAddr("web"): unable to parse IP`}},
		{"no parent", "10.96.0.10", nil, []string{"spec.parentRef: Required value"}},
		{"parent without resource and name", "10.96.0.10", &networkingv1.ParentReference{}, []string{
			"spec.parentRef.resource: Required value", "spec.parentRef.name: Required value",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: tt.ip}, Spec: networkingv1.IPAddressSpec{ParentRef: tt.ref}}
			if diff := cmp.Diff(tt.want, messages(st.Validate(a))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
	old := &networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: "10.96.0.10", ResourceVersion: "4"}, Spec: networkingv1.IPAddressSpec{ParentRef: ref}}
	moved := old.DeepCopy()
	moved.Spec.ParentRef = &networkingv1.ParentReference{Resource: "services", Namespace: "default", Name: "other"}
	errs := messages(st.ValidateUpdate(moved, old))
	if len(errs) != 1 || errs[0][:len("spec.parentRef: Invalid value")] != "spec.parentRef: Invalid value" {
		t.Errorf("immutable parentRef: %v", errs)
	}
}
