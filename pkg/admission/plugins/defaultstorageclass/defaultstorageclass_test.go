package defaultstorageclass

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kplane/kplane/pkg/admission"
	"github.com/kplane/kplane/pkg/admission/admissiontest"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func class(name string, age time.Duration, annotations map[string]string) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{
		Name:              name,
		Annotations:       annotations,
		CreationTimestamp: metav1.NewTime(epoch.Add(-age)),
	}}
}

func str(s string) *string { return &s }

func TestAdmit(t *testing.T) {
	isDefault := map[string]string{IsDefaultAnnotation: "true"}
	tests := []struct {
		name    string
		classes []runtime.Object
		claim   *corev1.PersistentVolumeClaim
		want    *string
	}{
		{
			name:    "no default class leaves the claim without a class",
			classes: []runtime.Object{class("slow", 0, nil), class("off", 0, map[string]string{IsDefaultAnnotation: "false"})},
			claim:   &corev1.PersistentVolumeClaim{},
		},
		{
			name:    "the one default class is set",
			classes: []runtime.Object{class("slow", 0, nil), class("standard", time.Hour, isDefault)},
			claim:   &corev1.PersistentVolumeClaim{},
			want:    str("standard"),
		},
		{
			name:    "the beta annotation marks a default too",
			classes: []runtime.Object{class("beta", 0, map[string]string{BetaIsDefaultAnnotation: "true"})},
			claim:   &corev1.PersistentVolumeClaim{},
			want:    str("beta"),
		},
		{
			name:    "of several defaults the newest wins",
			classes: []runtime.Object{class("old", 2*time.Hour, isDefault), class("new", time.Hour, isDefault), class("older", 3*time.Hour, isDefault)},
			claim:   &corev1.PersistentVolumeClaim{},
			want:    str("new"),
		},
		{
			name:    "of defaults created at once the first by name wins",
			classes: []runtime.Object{class("b", time.Hour, isDefault), class("a", time.Hour, isDefault), class("c", 2*time.Hour, isDefault)},
			claim:   &corev1.PersistentVolumeClaim{},
			want:    str("a"),
		},
		{
			name:    "a claim naming a class keeps it",
			classes: []runtime.Object{class("standard", 0, isDefault)},
			claim:   &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: str("fast")}},
			want:    str("fast"),
		},
		{
			name:    "an empty class name asks for no class and is kept",
			classes: []runtime.Object{class("standard", 0, isDefault)},
			claim:   &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: str("")}},
			want:    str(""),
		},
		{
			name:    "a claim with the beta class annotation is left alone",
			classes: []runtime.Object{class("standard", 0, isDefault)},
			claim:   &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{BetaClaimClassAnnotation: "fast"}}},
		},
		{
			name:    "a class read as unstructured is understood",
			classes: []runtime.Object{unstructuredClass(t, class("standard", 0, isDefault))},
			claim:   &corev1.PersistentVolumeClaim{},
			want:    str("standard"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &admissiontest.Source{}
			src.Add(storageClasses, tt.classes...)
			p, err := New(&admission.Config{Source: src})
			if err != nil {
				t.Fatal(err)
			}
			a := &admission.Attributes{Operation: admission.Create, Resource: corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"), Namespace: "ns", Name: "c", Object: tt.claim}
			if err := p.(admission.MutationInterface).Admit(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			got := tt.claim.Spec.StorageClassName
			if (got == nil) != (tt.want == nil) || (got != nil && *got != *tt.want) {
				t.Errorf("storageClassName = %v, want %v", deref(got), deref(tt.want))
			}
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func unstructuredClass(t *testing.T, sc *storagev1.StorageClass) runtime.Object {
	t.Helper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(sc)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: u}
}

func TestAdmitListErrorIsForbidden(t *testing.T) {
	src := &admissiontest.Source{}
	src.SetListError(errors.New("cache down"))
	p, _ := New(&admission.Config{Source: src})
	a := &admission.Attributes{Operation: admission.Create, Resource: corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"), Namespace: "ns", Name: "c", Object: &corev1.PersistentVolumeClaim{}}
	err := p.(admission.MutationInterface).Admit(context.Background(), a)
	if !apierrors.IsForbidden(err) {
		t.Fatalf("got %v, want Forbidden", err)
	}
	if want := `persistentvolumeclaims "c" is forbidden: list storage classes: cache down`; err.Error() != want {
		t.Errorf("got %q, want %q", err, want)
	}
}

func TestAdmitIgnoresOtherRequests(t *testing.T) {
	src := &admissiontest.Source{}
	src.Add(storageClasses, class("standard", 0, map[string]string{IsDefaultAnnotation: "true"}))
	p, _ := New(&admission.Config{Source: src})
	m := p.(admission.MutationInterface)
	if m.Handles(admission.Update) || !m.Handles(admission.Create) {
		t.Error("the plugin must handle CREATE only, as Kubernetes'")
	}
	claim := &corev1.PersistentVolumeClaim{}
	for _, a := range []*admission.Attributes{
		{Operation: admission.Create, Resource: corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"), Subresource: "status", Object: claim},
		{Operation: admission.Create, Resource: corev1.SchemeGroupVersion.WithResource("pods"), Object: &corev1.Pod{}},
	} {
		if err := m.Admit(context.Background(), a); err != nil {
			t.Fatal(err)
		}
	}
	if claim.Spec.StorageClassName != nil {
		t.Errorf("a subresource request was defaulted")
	}
	if _, err := New(&admission.Config{}); err == nil {
		t.Error("New without a Source succeeded")
	}
}
