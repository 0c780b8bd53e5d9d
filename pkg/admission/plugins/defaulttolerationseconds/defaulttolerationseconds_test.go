package defaulttolerationseconds

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/pkg/admission"
)

func secs(n int64) *int64 { return &n }

func notReady(n int64) corev1.Toleration {
	return corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: secs(n)}
}

func unreachable(n int64) corev1.Toleration {
	return corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: secs(n)}
}

func TestAdmit(t *testing.T) {
	custom := corev1.Toleration{Key: "example.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	tests := []struct {
		name string
		cfg  admission.Config
		in   []corev1.Toleration
		want []corev1.Toleration
	}{
		{
			name: "a pod without tolerations gets both with 300 seconds",
			want: []corev1.Toleration{notReady(300), unreachable(300)},
		},
		{
			name: "configured seconds are used",
			cfg:  admission.Config{DefaultNotReadyTolerationSeconds: 60, DefaultUnreachableTolerationSeconds: 120},
			want: []corev1.Toleration{notReady(60), unreachable(120)},
		},
		{
			name: "other tolerations are kept and the defaults appended",
			in:   []corev1.Toleration{custom},
			want: []corev1.Toleration{custom, notReady(300), unreachable(300)},
		},
		{
			name: "a pod tolerating not-ready keeps its own toleration and gets unreachable",
			in:   []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: secs(5)}},
			want: []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: secs(5)}, unreachable(300)},
		},
		{
			name: "a toleration of not-ready with any effect counts",
			in:   []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists}},
			want: []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists}, unreachable(300)},
		},
		{
			name: "a toleration of not-ready for NoSchedule only does not count",
			in:   []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			want: []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}, notReady(300), unreachable(300)},
		},
		{
			name: "an empty key with Exists tolerates everything",
			in:   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			want: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		},
		{
			name: "an empty key for NoExecute tolerates both",
			in:   []corev1.Toleration{{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
			want: []corev1.Toleration{{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
		},
		{
			name: "an empty key for NoSchedule tolerates neither",
			in:   []corev1.Toleration{{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			want: []corev1.Toleration{{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}, notReady(300), unreachable(300)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(&tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{Tolerations: tt.in}}
			a := &admission.Attributes{Operation: admission.Create, Resource: corev1.SchemeGroupVersion.WithResource("pods"), Namespace: "ns", Name: "p", Object: pod}
			if err := p.(admission.MutationInterface).Admit(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, pod.Spec.Tolerations); diff != "" {
				t.Errorf("tolerations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAdmitIgnoresOtherRequests(t *testing.T) {
	p, _ := New(&admission.Config{})
	m := p.(admission.MutationInterface)
	for _, op := range []admission.Operation{admission.Delete, admission.Connect} {
		if m.Handles(op) {
			t.Errorf("Handles(%s) = true, want false as Kubernetes' plugin", op)
		}
	}
	if !m.Handles(admission.Update) {
		t.Error("Handles(UPDATE) = false, want true")
	}
	pod := &corev1.Pod{}
	for _, a := range []*admission.Attributes{
		{Operation: admission.Update, Resource: corev1.SchemeGroupVersion.WithResource("pods"), Subresource: "status", Object: pod},
		{Operation: admission.Create, Resource: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "pods"}, Object: pod},
	} {
		if err := m.Admit(context.Background(), a); err != nil {
			t.Fatal(err)
		}
	}
	if len(pod.Spec.Tolerations) != 0 {
		t.Errorf("subresource or other group changed the pod: %v", pod.Spec.Tolerations)
	}
	err := m.Admit(context.Background(), &admission.Attributes{Operation: admission.Create, Resource: corev1.SchemeGroupVersion.WithResource("pods"), Object: &corev1.Service{}})
	if !apierrors.IsBadRequest(err) || err.Error() != "expected *api.Pod but got *v1.Service" {
		t.Errorf("non-pod object: got %v, want BadRequest as Kubernetes", err)
	}
}
