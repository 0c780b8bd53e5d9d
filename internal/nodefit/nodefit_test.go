package nodefit

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestTolerates(t *testing.T) {
	taint := &corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	for _, tc := range []struct {
		name string
		tol  corev1.Toleration
		want bool
	}{
		{"Equal with the value", corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu"}, true},
		{"default operator is Equal", corev1.Toleration{Key: "dedicated", Value: "gpu"}, true},
		{"Equal with another value", corev1.Toleration{Key: "dedicated", Value: "cpu"}, false},
		{"Exists ignores the value", corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists}, true},
		{"empty key with Exists tolerates everything", corev1.Toleration{Operator: corev1.TolerationOpExists}, true},
		{"other key", corev1.Toleration{Key: "other", Operator: corev1.TolerationOpExists}, false},
		{"matching effect", corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}, true},
		{"other effect", corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}, false},
		{"unknown operator", corev1.Toleration{Key: "dedicated", Operator: "Gt", Value: "1"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Tolerates(&tc.tol, taint); got != tc.want {
				t.Errorf("Tolerates = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestUntoleratedTaintFilters(t *testing.T) {
	taints := []corev1.Taint{{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule}, {Key: "hard", Effect: corev1.TaintEffectNoExecute}}
	if got := UntoleratedTaint(taints, nil, ScheduleBlocking); got == nil || got.Key != "hard" {
		t.Errorf("UntoleratedTaint = %v, want hard", got)
	}
	if got := UntoleratedTaint(taints[:1], nil, ScheduleBlocking); got != nil {
		t.Errorf("PreferNoSchedule blocked: %v", got)
	}
	tol := []corev1.Toleration{{Key: "hard", Operator: corev1.TolerationOpExists}}
	if got := UntoleratedTaint(taints, tol, Evicting); got != nil {
		t.Errorf("tolerated taint reported: %v", got)
	}
}

func TestInsufficient(t *testing.T) {
	q := resource.MustParse
	alloc := corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("4Gi"), "example.com/gpu": q("1")}
	used := corev1.ResourceList{corev1.ResourceCPU: q("1500m")}
	for _, tc := range []struct {
		name string
		req  corev1.ResourceList
		want []corev1.ResourceName
	}{
		{"fits", corev1.ResourceList{corev1.ResourceCPU: q("500m"), corev1.ResourceMemory: q("4Gi")}, nil},
		{"cpu beyond what is left", corev1.ResourceList{corev1.ResourceCPU: q("501m")}, []corev1.ResourceName{corev1.ResourceCPU}},
		{"cpu and memory, in order", corev1.ResourceList{corev1.ResourceMemory: q("5Gi"), corev1.ResourceCPU: q("1")}, []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}},
		{"extended resource", corev1.ResourceList{"example.com/gpu": q("2")}, []corev1.ResourceName{"example.com/gpu"}},
		{"resource the node lacks", corev1.ResourceList{"example.com/fpga": q("1")}, []corev1.ResourceName{"example.com/fpga"}},
		{"zero requests always fit", corev1.ResourceList{"example.com/fpga": q("0")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Insufficient(tc.req, used, alloc); !slices.Equal(got, tc.want) {
				t.Errorf("Insufficient = %v, want %v", got, tc.want)
			}
		})
	}
}
