package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func runtimeClass(handler string) *nodev1.RuntimeClass {
	return &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: handler}
}

func TestRuntimeClassValidation(t *testing.T) {
	withScheduling := func(s nodev1.Scheduling) *nodev1.RuntimeClass {
		r := runtimeClass("runsc")
		r.Scheduling = &s
		return r
	}
	runValidation(t, RuntimeClasses(), []validationCase{
		{"valid", func() *nodev1.RuntimeClass {
			r := runtimeClass("runsc")
			r.Overhead = &nodev1.Overhead{PodFixed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}}
			r.Scheduling = &nodev1.Scheduling{NodeSelector: map[string]string{"sandbox": "gvisor"},
				Tolerations: []corev1.Toleration{{Key: "sandbox", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}}
			return r
		}(), nil},
		{"no handler", runtimeClass(""), []string{`handler: Invalid value: "": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`}},
		{"handler not a label", runtimeClass("run.sc"), []string{`handler: Invalid value: "run.sc": must not contain dots`}},
		{"negative overhead", func() *nodev1.RuntimeClass {
			r := runtimeClass("runsc")
			r.Overhead = &nodev1.Overhead{PodFixed: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("-1Mi")}}
			return r
		}(), []string{`overhead.limits[memory]: Invalid value: "-1Mi": must be greater than or equal to 0`}},
		{"bad tolerations", withScheduling(nodev1.Scheduling{Tolerations: []corev1.Toleration{
			{Operator: corev1.TolerationOpEqual, Value: "x"},
			{Key: "k", Operator: corev1.TolerationOpExists, TolerationSeconds: ptr[int64](5)},
			{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
			{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		}}), []string{
			"scheduling.tolerations[0].operator: Invalid value: \"Equal\": operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
			"scheduling.tolerations[1].effect: Invalid value: \"\": effect must be 'NoExecute' when `tolerationSeconds` is set",
			`scheduling.tolerations[3]: Duplicate value: {"key":"k","operator":"Exists","effect":"NoSchedule"}`,
		}},
		{"bad node selector", withScheduling(nodev1.Scheduling{NodeSelector: map[string]string{"a": "-x"}}),
			[]string{`scheduling.nodeSelector: Invalid value: "-x": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`}},
	})
}

func TestRuntimeClassHandlerImmutable(t *testing.T) {
	st := RuntimeClasses()
	old := runtimeClass("runsc")
	old.ResourceVersion = "1"
	upd := old.DeepCopy()
	upd.Handler = "kata"
	want := []string{`handler: Invalid value: "kata": field is immutable`}
	if diff := cmp.Diff(want, errorStrings(st.ValidateUpdate(upd, old))); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}
