package client

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
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
		if r.URL.Query().Get("watch") == "true" {
			w.Header().Set("Content-Type", "application/json")
			data, _ := json.Marshal(map[string]any{"type": "ADDED", "object": pod})
			_, _ = w.Write(data)
			return
		}
		if r.Method == http.MethodDelete {
			writeJSON(w, 200, metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess})
			return
		}
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
		{"watch", func() (*metav1.ObjectMeta, error) {
			w, err := pods.Watch(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			defer w.Stop()
			ev, ok := <-w.ResultChan()
			if !ok || ev.Type != watch.Added {
				t.Errorf("event = %v %v", ev.Type, ok)
				return nil, nil
			}
			return &ev.Object.ObjectMeta, nil
		}, "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"},
		{"delete collection", func() (*metav1.ObjectMeta, error) {
			if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "app=web"}); err != nil {
				return nil, err
			}
			if got := rec.last(t); got.Method != http.MethodDelete || got.Path != "/api/v1/namespaces/default/pods" || got.Query != "labelSelector=app%3Dweb" {
				t.Errorf("sent %s %s?%s", got.Method, got.Path, got.Query)
			}
			return nil, nil
		}, "application/json"},
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
