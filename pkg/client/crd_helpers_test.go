package client_test

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/kplane/kplane/pkg/apiextensions"
	"github.com/kplane/kplane/pkg/apiserver"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/storage/memory"
)

// CRDs is the descriptor of customresourcedefinitions for the tests.
var CRDs = client.Resource[*apiextensionsv1.CustomResourceDefinition]{
	GroupVersionResource: apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"),
	Kind:                 "CustomResourceDefinition",
}

var widgetsGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// startCRDServer runs a kplane API server with its controllers (which serve
// custom resources) over loopback HTTP and returns a client for it.
func startCRDServer(t testing.TB) *client.Client {
	t.Helper()
	backend, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := apiserver.New(apiserver.Config{Backend: backend})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.RunControllers(ctx) })
	hs := httptest.NewServer(srv.Handler())
	c, err := client.New(client.Config{Host: hs.URL, UserAgent: "kplane-e2e"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		c.CloseIdleConnections()
		hs.CloseClientConnections()
		hs.Close()
		_ = backend.Close()
	})
	return c
}

// widgetCRD is a namespaced widgets.example.com served at v1 (storage,
// preferred) and v1beta1, with status and scale subresources, short name
// "wd" and category "all".
func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	return testCRD("example.com", "widgets", "Widget", apiextensionsv1.NamespaceScoped, []string{"wd"})
}

// testCRD is a CRD of group, plural and kind with versions v1 (storage)
// and v1beta1, status and scale subresources and the category "all".
func testCRD(group, plural, kind string, scope apiextensionsv1.ResourceScope, shortNames []string) *apiextensionsv1.CustomResourceDefinition {
	props := map[string]apiextensionsv1.JSONSchemaProps{
		"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"replicas": {Type: "integer"},
			"color":    {Type: "string"},
		}},
		"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"replicas": {Type: "integer"},
			"selector": {Type: "string"},
		}},
	}
	schema := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: props}}
	subs := &apiextensionsv1.CustomResourceSubresources{
		Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
		Scale: &apiextensionsv1.CustomResourceSubresourceScale{
			SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas", LabelSelectorPath: ptr.To(".status.selector"),
		},
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind, ShortNames: shortNames, Categories: []string{"all"}},
			Scope: scope,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: schema, Subresources: subs},
				{Name: "v1beta1", Served: true, Schema: schema, Subresources: subs},
			},
		},
	}
}

// createCRD creates crd and waits, by watching it, until it is Established.
func createCRD(t testing.TB, c *client.Client, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	crds := client.NewResource(c, CRDs)
	created, err := crds.Create(ctx, crd, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := crds.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + crd.Name, ResourceVersion: created.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if apiextensions.IsConditionTrue(created, apiextensionsv1.Established) {
		return
	}
	for ev := range w.ResultChan() {
		if ev.Object != nil && apiextensions.IsConditionTrue(ev.Object, apiextensionsv1.Established) {
			return
		}
	}
	t.Fatalf("CRD %s never became Established", crd.Name)
}
