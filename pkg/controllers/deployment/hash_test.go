package deployment

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func template(image string, labels map[string]string) *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}},
	}
}

func TestComputeHash(t *testing.T) {
	one, two := int32(1), int32(2)
	base := ComputeHash(template("img:1", map[string]string{"app": "web"}), nil)
	tests := []struct {
		name      string
		tpl       *corev1.PodTemplateSpec
		collision *int32
		same      bool
	}{
		{name: "same template", tpl: template("img:1", map[string]string{"app": "web"}), same: true},
		{name: "other image", tpl: template("img:2", map[string]string{"app": "web"})},
		{name: "other label", tpl: template("img:1", map[string]string{"app": "api"})},
		{name: "collision count 1", tpl: template("img:1", map[string]string{"app": "web"}), collision: &one},
		{name: "collision count 2", tpl: template("img:1", map[string]string{"app": "web"}), collision: &two},
	}
	seen := map[string]string{base: "base"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ComputeHash(tt.tpl, tt.collision)
			if got == "" || len(got) > 10 {
				t.Fatalf("hash %q: want 1 to 10 characters", got)
			}
			for _, r := range got {
				// SafeEncodeString's alphabet: no vowels, no 0, 1, 3.
				if !(r >= 'b' && r <= 'z' || r >= '2' && r <= '9') || r == 'e' || r == 'i' || r == 'o' || r == 'u' || r == '3' {
					t.Fatalf("hash %q has %q outside the safe alphabet", got, r)
				}
			}
			if tt.same {
				if got != base {
					t.Fatalf("hash %q, want %q", got, base)
				}
				return
			}
			if prev, ok := seen[got]; ok {
				t.Fatalf("hash %q equals that of %s", got, prev)
			}
			seen[got] = tt.name
		})
	}
}

func TestComputeHashMapOrder(t *testing.T) {
	// Maps are printed with sorted keys: the hash never depends on
	// iteration order.
	labels := map[string]string{}
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		labels[k] = k
	}
	want := ComputeHash(template("img", labels), nil)
	for i := 0; i < 50; i++ {
		if got := ComputeHash(template("img", labels), nil); got != want {
			t.Fatalf("hash %q then %q", want, got)
		}
	}
}

func TestEqualIgnoreHash(t *testing.T) {
	a := template("img:1", map[string]string{"app": "web", PodTemplateHashLabel: "abc"})
	b := template("img:1", map[string]string{"app": "web"})
	if !equalIgnoreHash(a, b) {
		t.Error("templates differing only by the hash label are not equal")
	}
	if equalIgnoreHash(a, template("img:2", map[string]string{"app": "web"})) {
		t.Error("templates with other images are equal")
	}
	if !equalIgnoreHash(template("i", map[string]string{PodTemplateHashLabel: "x"}), template("i", nil)) {
		t.Error("hash label only vs no labels are not equal")
	}
}

func BenchmarkComputeHash(b *testing.B) {
	tpl := template("registry.example/app:1.2.3", map[string]string{"app": "web", "tier": "frontend"})
	b.ReportAllocs()
	for b.Loop() {
		ComputeHash(tpl, nil)
	}
}
