package openapi_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/kube-openapi/pkg/schemaconv"

	"github.com/kplane/kplane/pkg/apiserver/openapi"
)

// Build the documents for one resource and fetch the v3 index the way
// client-go does.
func Example() {
	docs, err := openapi.New(openapi.Config{Kinds: []openapi.Kind{{
		GVK:          corev1.SchemeGroupVersion.WithKind("ConfigMap"),
		Resource:     "configmaps",
		Namespaced:   true,
		Object:       &corev1.ConfigMap{},
		List:         &corev1.ConfigMapList{},
		Subresources: nil,
	}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/openapi/", docs)

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/openapi/v3", nil))
	fmt.Println(rec.Code, rec.Header().Get("Content-Type"))

	rec = httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/openapi/v2", nil)
	req.Header.Set("Accept", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")
	mux.ServeHTTP(rec, req)
	fmt.Println(rec.Code, rec.Header().Get("Content-Type"))
	// Output:
	// 200 application/json
	// 200 application/com.github.proto-openapi.spec.v2.v1.0+protobuf
}

// Build the structured-merge-diff schema server-side apply merges Pods by,
// and read how it identifies a container's ports.
func ExampleModels() {
	models, names, err := openapi.Models([]openapi.Kind{{
		GVK:        corev1.SchemeGroupVersion.WithKind("Pod"),
		Resource:   "pods",
		Namespaced: true,
		Object:     &corev1.Pod{},
		List:       &corev1.PodList{},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	s, err := schemaconv.ToSchemaFromOpenAPI(models, false)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(names[corev1.SchemeGroupVersion.WithKind("Pod")])
	container, _ := s.FindNamedType("io.k8s.api.core.v1.Container")
	ports, _ := container.Map.FindField("ports")
	fmt.Println(ports.Type.Inlined.List.ElementRelationship, ports.Type.Inlined.List.Keys)
	// Output:
	// io.k8s.api.core.v1.Pod
	// associative [containerPort protocol]
}
