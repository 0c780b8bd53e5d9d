package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestLimitRangeDefaults(t *testing.T) {
	l := &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "default"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type: corev1.LimitTypeContainer,
			Max:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			Min:  corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
		}}},
	}
	if errs := createObj(t, LimitRanges(), l); len(errs) > 0 {
		t.Fatal(errs)
	}
	item := l.Spec.Limits[0]
	cpu, defReq, mem := item.Default[corev1.ResourceCPU], item.DefaultRequest[corev1.ResourceCPU], item.DefaultRequest[corev1.ResourceMemory]
	if cpu.String() != "2" || defReq.String() != "2" || mem.String() != "64Mi" {
		t.Errorf("defaults %+v", item)
	}
	l.Spec.Limits[0].Type = "Node"
	want := []string{`spec.limits[0].type: Invalid value: "Node": must be a standard limit type or fully qualified`}
	if diff := cmp.Diff(want, errStrings(LimitRanges().Validate(l))); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	bad := &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "default"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
			{Type: corev1.LimitTypePod, Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}, Min: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
				Default: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
			{Type: corev1.LimitTypePersistentVolumeClaim},
			{Type: corev1.LimitTypeContainer, Max: corev1.ResourceList{"pods": resource.MustParse("1")}},
		}},
	}
	want = []string{
		"spec.limits[0].default: Forbidden: may not be specified when `type` is 'Pod'",
		`spec.limits[0].min[cpu]: Invalid value: "2": min value 2 is greater than max value 1`,
		"spec.limits[1].limits: Required value: either minimum or maximum storage value is required, but neither was provided",
		`spec.limits[2].max[pods]: Invalid value: "pods": must be a standard resource for containers`,
		// Defaulted from the max.
		`spec.limits[2].default[pods]: Invalid value: "pods": must be a standard resource for containers`,
		`spec.limits[2].defaultRequest[pods]: Invalid value: "pods": must be a standard resource for containers`,
	}
	if diff := cmp.Diff(want, errStrings(createObj(t, LimitRanges(), bad))); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}
