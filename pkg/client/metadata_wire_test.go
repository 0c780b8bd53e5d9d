package client

import (
	"context"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestMetadataWire checks the Accept headers the metadata client sends and
// that it falls back to reading the metadata of a whole object when the
// server ignores the PartialObjectMetadata form.
func TestMetadataWire(t *testing.T) {
	pod := testPod("default", "p")
	pod.Labels = map[string]string{"app": "web"}
	podList := &corev1.PodList{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"},
		ListMeta: metav1.ListMeta{ResourceVersion: "9"},
		Items:    []corev1.Pod{*pod},
	}
	rec, c := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/namespaces/default/pods" {
			writeJSON(w, 200, podList)
			return
		}
		writeJSON(w, 200, pod)
	})
	pods := NewMetadata(c).Resource(corev1.SchemeGroupVersion.WithResource("pods")).Namespace("default")
	ctx := context.Background()

	tests := []struct {
		name       string
		call       func() (*metav1.ObjectMeta, error)
		wantAccept string
	}{
		{"get", func() (*metav1.ObjectMeta, error) {
			m, err := pods.Get(ctx, "p", metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return &m.ObjectMeta, nil
		}, "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"},
		{"list", func() (*metav1.ObjectMeta, error) {
			l, err := pods.List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			if len(l.Items) != 1 || l.ResourceVersion != "9" {
				t.Errorf("list = %+v", l)
				return nil, nil
			}
			return &l.Items[0].ObjectMeta, nil
		}, "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"},
		{"patch", func() (*metav1.ObjectMeta, error) {
			m, err := pods.Patch(ctx, "p", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
			if err != nil {
				return nil, err
			}
			return &m.ObjectMeta, nil
		}, "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := tc.call()
			if err != nil {
				t.Fatal(err)
			}
			if m != nil && (m.Name != "p" || m.Labels["app"] != "web") {
				t.Errorf("metadata = %+v, want the pod's", m)
			}
			if got := rec.last(t).Header.Get("Accept"); got != tc.wantAccept {
				t.Errorf("Accept = %q, want %q", got, tc.wantAccept)
			}
		})
	}
}
