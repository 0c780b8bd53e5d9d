package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestResourceQuota(t *testing.T) {
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "default"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"pods": resource.MustParse("-1")}},
		Status:     corev1.ResourceQuotaStatus{Used: corev1.ResourceList{"pods": resource.MustParse("3")}},
	}
	want := []string{`spec.hard[pods]: Invalid value: "-1": must be greater than or equal to 0`}
	if diff := cmp.Diff(want, errStrings(createObj(t, ResourceQuotas(), q))); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	if len(q.Status.Used) != 0 {
		t.Errorf("create kept the status %+v", q.Status)
	}
	tests := []struct {
		name string
		spec corev1.ResourceQuotaSpec
		want []string
	}{
		{"valid", corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"requests.cpu": resource.MustParse("2"), "count/deployments.apps": resource.MustParse("4")}}, nil},
		{"unknown name", corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"widgets": resource.MustParse("1")}}, []string{
			`spec.hard[widgets]: Invalid value: "widgets": must be a standard resource type or fully qualified`,
			`spec.hard[widgets]: Invalid value: "widgets": must be a standard resource for quota`,
		}},
		{"fraction of pods", corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"pods": resource.MustParse("1500m")}},
			[]string{`spec.hard[pods]: Invalid value: "1500m": must be an integer`}},
		{"scope not for the resource", corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"services": resource.MustParse("1")},
			Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}},
			[]string{`spec.scopes: Invalid value: ["BestEffort"]: unsupported scope applied to resource`}},
		{"conflicting scopes", corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"pods": resource.MustParse("1")},
			Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating}},
			[]string{`spec.scopes: Invalid value: ["Terminating","NotTerminating"]: conflicting scopes`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "default"}, Spec: tt.spec}
			if diff := cmp.Diff(tt.want, errStrings(createObj(t, ResourceQuotas(), q))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}
