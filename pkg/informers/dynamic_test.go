package informers_test

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/testenv"
)

// A factory serves typed, unstructured and metadata-only informers of one
// resource side by side, one of each, and unstructured ones for custom
// resources.
func TestDynamicAndMetadataInformers(t *testing.T) {
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
	w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w1", "namespace": "default"}, "size": int64(3)}}
	env := testenv.Start(t, testenv.WithCRDs(crd), testenv.WithObjects(w, deploymentNamed("web")))
	f := newFactory(t, informers.Config{Client: env.Client})
	deployments := client.Deployments.GroupVersionResource
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

	typed, err := f.Deployments()
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := informers.ForDynamic(f, deployments)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := informers.ForMetadata(f, deployments)
	if err != nil {
		t.Fatal(err)
	}
	cr, err := informers.ForDynamic(f, widgets)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := informers.ForDynamic(f, deployments); again != dyn {
		t.Error("a second ForDynamic made another informer")
	}
	if again, _ := informers.ForMetadata(f, deployments); again != meta {
		t.Error("a second ForMetadata made another informer")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.Start(ctx)
	for gvr, ok := range f.WaitForCacheSync(ctx) {
		if !ok {
			t.Fatalf("%s did not sync", gvr)
		}
	}
	if d, err := typed.Lister().Get("default/web"); err != nil || d.Name != "web" {
		t.Errorf("typed: %v, %v", d, err)
	}
	if u, err := dyn.Lister().Get("default/web"); err != nil || u.GetKind() != "Deployment" {
		t.Errorf("unstructured: %v, %v", u, err)
	}
	if m, err := meta.Lister().Get("default/web"); err != nil || m.Name != "web" {
		t.Errorf("metadata: %v, %v", m, err)
	}
	got, err := cr.Lister().Get("default/w1")
	if err != nil {
		t.Fatal(err)
	}
	if n, _, _ := unstructured.NestedInt64(got.Object, "size"); n != 3 {
		t.Errorf("custom resource %v", got.Object)
	}
}

func deploymentNamed(name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
	d.Spec.Template.Labels = labels
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "nginx"}}
	return d
}
