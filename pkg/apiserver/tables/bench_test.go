package tables

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// BenchmarkConvertPodList measures a `kubectl get pods` over 10,000 pods.
func BenchmarkConvertPodList(b *testing.B) {
	list := &corev1.PodList{}
	for i := range 10000 {
		p := pod("app", "sidecar")
		p.Name = fmt.Sprintf("web-%d", i)
		p.Labels = map[string]string{"app": "web"}
		p.Status.Phase = corev1.PodRunning
		p.Status.ContainerStatuses = []corev1.ContainerStatus{running("app", true, 1), running("sidecar", true, 0)}
		list.Items = append(list.Items, *p)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Convert(list, now); err != nil {
			b.Fatal(err)
		}
	}
}
