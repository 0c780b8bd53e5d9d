package client_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kplane/kplane/pkg/apiserver"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/storage/memory"
)

// ExampleNewDynamic defines a custom resource with a
// CustomResourceDefinition, waits until it is served, then creates, patches
// and lists one of its objects, all through the dynamic client and the
// RESTMapper, without Go types for either.
func ExampleNewDynamic() {
	ctx, cancel := context.WithCancel(context.Background())
	backend, _ := memory.New(memory.Config{})
	defer backend.Close()
	srv, _ := apiserver.New(apiserver.Config{Backend: backend})
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.RunControllers(ctx) }) // serves custom resources
	defer wg.Wait()
	defer cancel()
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	defer hs.CloseClientConnections()

	c, err := client.New(client.Config{Host: hs.URL})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.CloseIdleConnections()
	dyn := client.NewDynamic(c)

	// Define widgets.example.com and wait for it to be Established.
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	crd := &unstructured.Unstructured{}
	if err := crd.UnmarshalJSON([]byte(`{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": {"name": "widgets.example.com"},
		"spec": {"group": "example.com", "scope": "Namespaced",
			"names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
			"versions": [{"name": "v1", "served": true, "storage": true,
				"schema": {"openAPIV3Schema": {"type": "object", "properties": {
					"spec": {"type": "object", "properties": {"color": {"type": "string"}}}}}}}]}}`)); err != nil {
		fmt.Println(err)
		return
	}
	w, err := crds.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=widgets.example.com"})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	for ev := range w.ResultChan() {
		if ev.Object != nil && established(ev.Object) {
			break
		}
	}
	w.Stop()

	// Find the resource by its short name, as kubectl does.
	mapper, _ := client.NewRESTMapper(client.RESTMapperConfig{Discovery: client.NewDiscovery(c)})
	gvr, err := mapper.ResourceFor(schema.GroupVersionResource{Resource: "wd"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("wd is", gvr)

	widgets := dyn.Resource(gvr).Namespace("default")
	widget := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w1"},
		"spec":     map[string]any{"color": "red"},
	}}
	if _, err := widgets.Create(ctx, widget, metav1.CreateOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	patched, err := widgets.Patch(ctx, "w1", types.MergePatchType, []byte(`{"spec":{"color":"blue"}}`), metav1.PatchOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	color, _, _ := unstructured.NestedString(patched.Object, "spec", "color")
	fmt.Println(patched.GetKind(), patched.GetName(), color)

	list, err := widgets.List(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, item := range list.Items {
		fmt.Println(item.GetAPIVersion(), item.GetKind(), item.GetNamespace(), item.GetName())
	}
	// Output:
	// wd is example.com/v1, Resource=widgets
	// Widget w1 blue
	// example.com/v1 Widget default w1
}

// established reports whether a CustomResourceDefinition, as unstructured,
// has the condition Established=True.
func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}
