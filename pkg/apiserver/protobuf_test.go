package apiserver

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestEncodeProtobufRoundTrip checks the envelope encodeProtobuf writes is
// the one decodeProtobuf (and so client-go's protobuf serializer, whose
// format decodeProtobuf reads) decodes back to the same object.
func TestEncodeProtobufRoundTrip(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"a": "b"}, ResourceVersion: "7"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}
	gvk := corev1.SchemeGroupVersion.WithKind("Pod")
	data, err := encodeProtobuf(pod, gvk)
	if err != nil {
		t.Fatal(err)
	}
	var got corev1.Pod
	if err := decodeProtobuf(data, &got, gvk); err != nil {
		t.Fatal(err)
	}
	if got.Name != "p" || got.Namespace != "ns" || got.Labels["a"] != "b" || got.ResourceVersion != "7" || got.Spec.Containers[0].Image != "nginx" {
		t.Errorf("round trip: got %+v", got)
	}
	if got.Kind != "Pod" || got.APIVersion != "v1" {
		t.Errorf("round trip kind: got %s %s", got.APIVersion, got.Kind)
	}
	if _, err := encodeProtobuf(&unstructured.Unstructured{Object: map[string]any{}}, gvk); err == nil {
		t.Error("an unstructured object was encoded as protobuf")
	}
}
