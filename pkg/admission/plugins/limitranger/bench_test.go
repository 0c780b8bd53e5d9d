package limitranger

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/admission"
	"github.com/kplane/kplane/pkg/admission/admissiontest"
)

// BenchmarkAdmitAndValidate is the plugin's share of a pod create in a
// namespace with one LimitRange of defaults and bounds.
func BenchmarkAdmitAndValidate(b *testing.B) {
	lr := limitRange("d",
		corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Default: rl("cpu", "500m", "memory", "512Mi"), DefaultRequest: rl("cpu", "100m", "memory", "128Mi"), Min: rl("cpu", "10m"), Max: rl("memory", "1Gi"), MaxLimitRequestRatio: rl("cpu", "10")},
		corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: rl("cpu", "4", "memory", "4Gi")},
	)
	src := &admissiontest.Source{}
	src.Add(limitRanges, lr)
	p, err := New(&admission.Config{Source: src})
	if err != nil {
		b.Fatal(err)
	}
	pl := p.(*plugin)
	proto := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		a := podAttrs(admission.Create, proto.DeepCopy())
		if err := pl.Admit(ctx, a); err != nil {
			b.Fatal(err)
		}
		if err := pl.Validate(ctx, a); err != nil {
			b.Fatal(err)
		}
	}
}
