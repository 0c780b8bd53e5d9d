package serviceaccount

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/admission"
)

// BenchmarkAdmitAndValidate is the plugin's share of a pod create: Admit
// (which validates too) and the chain's Validate, the ServiceAccount in the
// cache.
func BenchmarkAdmitAndValidate(b *testing.B) {
	p, err := New(&admission.Config{Source: cached(sa("default"))})
	if err != nil {
		b.Fatal(err)
	}
	pl := p.(*plugin)
	proto := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		a := attrs(admission.Create, proto.DeepCopy())
		if err := pl.Admit(ctx, a); err != nil {
			b.Fatal(err)
		}
		if err := pl.Validate(ctx, a); err != nil {
			b.Fatal(err)
		}
	}
}
