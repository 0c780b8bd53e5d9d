package podendpoint

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

type services []*corev1.Service

func (s services) List(labels.Selector) ([]*corev1.Service, error) { return s, nil }

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func readyPod(name string, at time.Time, lbls map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: lbls, ResourceVersion: "1"},
		Status: corev1.PodStatus{PodIP: "10.0.0.1", Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(at)},
		}},
	}
}

func TestFindPort(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}}},
		InitContainers: []corev1.Container{
			{RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), Ports: []corev1.ContainerPort{{Name: "proxy", ContainerPort: 15001, Protocol: corev1.ProtocolTCP}}},
			{Ports: []corev1.ContainerPort{{Name: "init", ContainerPort: 1, Protocol: corev1.ProtocolTCP}}},
		},
	}}
	tests := []struct {
		name   string
		target intstr.IntOrString
		proto  corev1.Protocol
		want   int32
		ok     bool
	}{
		{"number taken as is", intstr.FromInt32(9000), corev1.ProtocolTCP, 9000, true},
		{"name from a container", intstr.FromString("http"), corev1.ProtocolTCP, 8080, true},
		{"name with another protocol not found", intstr.FromString("http"), corev1.ProtocolUDP, 0, false},
		{"name from a sidecar", intstr.FromString("proxy"), corev1.ProtocolTCP, 15001, true},
		{"name of a plain init container not found", intstr.FromString("init"), corev1.ProtocolTCP, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FindPort(pod, &corev1.ServicePort{TargetPort: tc.target, Protocol: tc.proto})
			if got != tc.want || (err == nil) != tc.ok {
				t.Errorf("FindPort = %d, %v; want %d, found %v", got, err, tc.want, tc.ok)
			}
		})
	}
}

func TestServicesToSync(t *testing.T) {
	svcs := services{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "a"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "b"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "none"}},
	}
	old := readyPod("p", t0, map[string]string{"app": "a"})
	mod := func(f func(p *corev1.Pod)) *corev1.Pod {
		p := old.DeepCopy()
		p.ResourceVersion = "2"
		f(p)
		return p
	}
	tests := []struct {
		name string
		cur  *corev1.Pod
		want []string
	}{
		{"resync: nothing", old, nil},
		{"annotation only: nothing", mod(func(p *corev1.Pod) { p.Annotations = map[string]string{"x": "y"} }), nil},
		{"readiness: the pod's services", mod(func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }), []string{"ns/a"}},
		{"deletion: the pod's services", mod(func(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.NewTime(t0)) }), []string{"ns/a"}},
		{"labels: services of both states", mod(func(p *corev1.Pod) { p.Labels = map[string]string{"app": "b"} }), []string{"ns/b", "ns/a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ServicesToSync(svcs, old, tc.cur)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("services (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTriggerTimes(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", CreationTimestamp: metav1.NewTime(t0)}}
	var tt TriggerTimes
	a := readyPod("a", t0.Add(time.Minute), nil)
	if got := tt.Compute(svc, []*corev1.Pod{a}); !got.Equal(t0) {
		t.Errorf("first computation %v, want the service's creation %v", got, t0)
	}
	if got := tt.Compute(svc, []*corev1.Pod{a}); !got.IsZero() {
		t.Errorf("nothing changed: %v, want zero", got)
	}
	b := readyPod("b", t0.Add(3*time.Minute), nil)
	a2 := readyPod("a", t0.Add(2*time.Minute), nil)
	if got := tt.Compute(svc, []*corev1.Pod{a2, b}); !got.Equal(t0.Add(2 * time.Minute)) {
		t.Errorf("two pods changed: %v, want the earliest change %v", got, t0.Add(2*time.Minute))
	}
	tt.Forget("ns/web")
	if got := tt.Compute(svc, []*corev1.Pod{a2, b}); !got.Equal(t0) {
		t.Errorf("after Forget: %v, want the service's creation", got)
	}
}
