package apiserver

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkCustomResourceVsConfigMap runs create, get and list of 1,000
// objects through the HTTP API for a custom resource (widgets, with a
// schema, status and scale subresources) and for ConfigMaps of about the
// same size, side by side, so the ratio can be read off one run:
//
//	go test -run '^$' -bench CustomResourceVsConfigMap -benchtime 2s ./pkg/apiserver/
func BenchmarkCustomResourceVsConfigMap(b *testing.B) {
	kinds := []struct {
		name string
		path string
		body func(name string) []byte
	}{
		{"configmap", "/api/v1/namespaces/default/configmaps", func(name string) []byte {
			data, _ := json.Marshal(&corev1.ConfigMap{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "bench"}},
				Data:       map[string]string{"color": "red", "replicas": "2"},
			})
			return data
		}},
		{"customresource", widgetsPath, func(name string) []byte {
			w := widget(name, 2, "red")
			w["metadata"].(map[string]any)["labels"] = map[string]any{"app": "bench"}
			data, _ := json.Marshal(w)
			return data
		}},
	}
	for _, k := range kinds {
		setup := func(b *testing.B) (*testEnv, func(method, url string, body []byte, want int)) {
			e, c := benchEnv(b)
			e.runControllers()
			e.createCRD(testCRD())
			return e, func(method, url string, body []byte, want int) { benchDo(b, c, method, url, body, want) }
		}
		b.Run(k.name+"/create", func(b *testing.B) {
			e, do := setup(b)
			var n atomic.Int64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					do("POST", e.http.URL+k.path, k.body(fmt.Sprintf("o%d", n.Add(1))), 201)
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		})
		b.Run(k.name+"/get", func(b *testing.B) {
			e, do := setup(b)
			do("POST", e.http.URL+k.path, k.body("o"), 201)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					do("GET", e.http.URL+k.path+"/o", nil, 200)
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		})
		b.Run(k.name+"/list1000", func(b *testing.B) {
			e, do := setup(b)
			for i := range 1000 {
				do("POST", e.http.URL+k.path, k.body(fmt.Sprintf("o%04d", i)), 201)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				do("GET", e.http.URL+k.path, nil, 200)
			}
		})
	}
}
