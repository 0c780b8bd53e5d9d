package registry

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNamespaceCreateAddsKubernetesFinalizer(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []corev1.FinalizerName
		want []corev1.FinalizerName
	}{
		{"none", nil, []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		{"others kept", []corev1.FinalizerName{"example.com/x"}, []corev1.FinalizerName{"example.com/x", corev1.FinalizerKubernetes}},
		{"not doubled", []corev1.FinalizerName{corev1.FinalizerKubernetes}, []corev1.FinalizerName{corev1.FinalizerKubernetes}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}, Spec: corev1.NamespaceSpec{Finalizers: tc.in}}
			ns.Status.Phase = corev1.NamespaceTerminating
			st := Namespaces()
			st.Default(ns)
			st.PrepareForCreate(ns)
			if !slices.Equal(ns.Spec.Finalizers, tc.want) {
				t.Errorf("spec.finalizers %v, want %v", ns.Spec.Finalizers, tc.want)
			}
			if ns.Status.Phase != corev1.NamespaceActive {
				t.Errorf("phase %v, want Active", ns.Status.Phase)
			}
		})
	}
}

func TestValidateNamespaceFinalizers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      []corev1.FinalizerName
		wantErr bool
	}{
		{"standard", []corev1.FinalizerName{corev1.FinalizerKubernetes, metav1.FinalizerOrphanDependents}, false},
		{"qualified", []corev1.FinalizerName{"example.com/hold"}, false},
		{"unqualified", []corev1.FinalizerName{"hold"}, true},
		{"bad characters", []corev1.FinalizerName{"example.com/a b"}, true},
		{"empty", []corev1.FinalizerName{""}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateNamespaceFinalizers(tc.in)
			if (len(errs) > 0) != tc.wantErr {
				t.Errorf("errors %v, want errors: %v", errs, tc.wantErr)
			}
			for _, e := range errs {
				if e.Field != "spec.finalizers[0]" {
					t.Errorf("error on %s, want spec.finalizers[0]", e.Field)
				}
			}
		})
	}
}
