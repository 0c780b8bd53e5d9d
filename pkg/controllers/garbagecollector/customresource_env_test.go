package garbagecollector

import (
	"context"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/testenv"
)

// A custom resource among the monitored resources is collected and
// collects as a built-in does, in both directions, through a
// metadata-only informer.
func TestEnvCustomResourceOwnership(t *testing.T) {
	preserve := true
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve}}}},
		},
	}
	widgetGVR := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	resources := append(DefaultResources(), Resource{GroupVersionResource: widgetGVR, Kind: "Widget", Namespaced: true})
	env := testenv.Start(t, testenv.WithCRDs(crd), testenv.WithController(Name, func(ctx context.Context, env *testenv.Env) error {
		logger := slog.New(slog.DiscardHandler)
		f, err := informers.New(informers.Config{Client: env.Client, Logger: logger})
		if err != nil {
			return err
		}
		defer f.Shutdown()
		gc, err := New(Config{Client: env.Client, Informers: f, Resources: resources, Logger: logger})
		if err != nil {
			return err
		}
		f.Start(ctx)
		return gc.Run(ctx, 2)
	}))
	ctx := t.Context()
	ns := env.Namespace(t)
	widgets := client.Resource[*unstructured.Unstructured]{GroupVersionResource: widgetGVR, Kind: "Widget", Namespaced: true}
	wc := client.NewResource(env.Client, widgets).Namespace(ns)
	cms := client.NewResource(env.Client, client.ConfigMaps).Namespace(ns)

	// A ConfigMap owns a Widget: the Widget goes with it.
	owner, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dep := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "dependent"}}}
	dep.SetOwnerReferences([]metav1.OwnerReference{cmRef(owner, false)})
	if _, err := wc.Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A Widget owns a ConfigMap: the ConfigMap goes with it.
	w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "parent"}}}
	parent, err := wc.Create(ctx, w, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "child", OwnerReferences: []metav1.OwnerReference{ref("Widget", "example.com/v1", parent, false)}}}
	if _, err := cms.Create(ctx, child, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	if err := cms.Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitForDeletion(t, env, widgets, ns+"/dependent")
	if err := wc.Delete(ctx, "parent", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitForDeletion(t, env, client.ConfigMaps, ns+"/child")
}
