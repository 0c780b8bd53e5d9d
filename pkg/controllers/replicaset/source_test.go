package replicaset

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestSourceKindOwnsTheCreatedPods(t *testing.T) {
	rcKind := corev1.SchemeGroupVersion.WithKind("ReplicationController")
	tests := []struct {
		name           string
		kind           schema.GroupVersionKind
		wantAPIVersion string
		wantKind       string
	}{
		{"without a source pods are owned by the ReplicaSet", schema.GroupVersionKind{}, "apps/v1", "ReplicaSet"},
		{"a source's kind owns the pods", rcKind, "v1", "ReplicationController"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &syncer{kind: tt.kind}
			pod := podFromTemplate(newRS(1), s.ownerKind())
			ref := pod.OwnerReferences[0]
			if ref.APIVersion != tt.wantAPIVersion || ref.Kind != tt.wantKind || ref.UID != "rs-uid" || !*ref.Controller {
				t.Errorf("owner reference %+v, want %s %s", ref, tt.wantAPIVersion, tt.wantKind)
			}
		})
	}
}

func TestSourceValidation(t *testing.T) {
	if _, err := New(Config{Client: nil}); err == nil {
		t.Fatal("no error without a client")
	}
	for _, src := range []Source{{}, {Name: "n", QueueName: "q"}, {Name: "n", QueueName: "q", Kind: corev1.SchemeGroupVersion.WithKind("ReplicationController")}} {
		if err := src.validate(); err == nil {
			t.Errorf("source %+v accepted", src)
		}
	}
}
