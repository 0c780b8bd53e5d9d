package compat

import (
	"context"
	"fmt"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

func compatCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "databases.db.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "db.example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "databases", Kind: "Database", ShortNames: []string{"dbs"}},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"replicas": {Type: "integer"}, "engine": {Type: "string"},
						}},
						"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"replicas": {Type: "integer"}, "phase": {Type: "string"},
						}},
					},
				}},
				Subresources: &apiextensionsv1.CustomResourceSubresources{
					Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
					Scale:  &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas"},
				},
			}},
		},
	}
}

// waitEstablished watches the CRD with client-go until it is Established.
func waitEstablished(t *testing.T, cs apiextensionsclient.Interface, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w, err := cs.ApiextensionsV1().CustomResourceDefinitions().Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		crd, ok := ev.Object.(*apiextensionsv1.CustomResourceDefinition)
		if !ok {
			continue
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return crd
			}
		}
	}
	t.Fatalf("CRD %s never Established", name)
	return nil
}

// TestCRDsWithClientGo creates a CRD with client-go's apiextensions
// clientset and drives its custom resources with the dynamic client and a
// dynamic shared informer, as operators and kubectl do.
func TestCRDsWithClientGo(t *testing.T) {
	ctx := context.Background()
	srv := startServer(t)
	cs, err := apiextensionsclient.NewForConfig(srv.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, compatCRD(), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CRD: %v", err)
	}
	crd := waitEstablished(t, cs, "databases.db.example.com")
	if crd.Status.AcceptedNames.Kind != "Database" || crd.Spec.Names.ListKind != "DatabaseList" || crd.Spec.Conversion.Strategy != apiextensionsv1.NoneConverter {
		t.Errorf("CRD after create: names %+v conversion %+v", crd.Status.AcceptedNames, crd.Spec.Conversion)
	}

	dc, err := dynamic.NewForConfig(srv.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: "db.example.com", Version: "v1", Resource: "databases"}
	dbs := dc.Resource(gvr).Namespace("default")

	// A dynamic informer sees what follows.
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dc, 0, "default", nil)
	inf := factory.ForResource(gvr).Informer()
	rec := newRecorder()
	if _, err := inf.AddEventHandler(rec.handler()); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer func() { close(stop); factory.Shutdown() }()
	factory.Start(stop)
	if !cache.WaitForCacheSync(stop, inf.HasSynced) {
		t.Fatal("dynamic informer did not sync")
	}

	for i := range 5 {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "db.example.com/v1", "kind": "Database",
			"metadata": map[string]any{"name": fmt.Sprintf("db%d", i), "labels": map[string]any{"tier": map[bool]string{true: "gold", false: "silver"}[i%2 == 0]}},
			"spec":     map[string]any{"replicas": int64(1), "engine": "postgres"},
		}}
		if _, err := dbs.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
	}
	rec.waitFor(t, "add/db4")

	got, err := dbs.Get(ctx, "db0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas"); n != 1 || got.GetGeneration() != 1 {
		t.Errorf("get: replicas %d generation %d", n, got.GetGeneration())
	}

	// Status through UpdateStatus; the main resource keeps it.
	_ = unstructured.SetNestedField(got.Object, "Ready", "status", "phase")
	st, err := dbs.UpdateStatus(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update status: %v", err)
	}
	if p, _, _ := unstructured.NestedString(st.Object, "status", "phase"); p != "Ready" {
		t.Errorf("status.phase = %q", p)
	}
	_ = unstructured.SetNestedField(st.Object, "mysql", "spec", "engine")
	unstructured.RemoveNestedField(st.Object, "status")
	upd, err := dbs.Update(ctx, st, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if p, _, _ := unstructured.NestedString(upd.Object, "status", "phase"); p != "Ready" || upd.GetGeneration() != 2 {
		t.Errorf("after update: status.phase %q generation %d", p, upd.GetGeneration())
	}
	// A stale resourceVersion conflicts.
	if _, err := dbs.Update(ctx, st, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("stale update: %v", err)
	}

	// Scale through the scale subresource.
	scale, err := dbs.Get(ctx, "db0", metav1.GetOptions{}, "scale")
	if err != nil {
		t.Fatalf("get scale: %v", err)
	}
	if scale.GetKind() != "Scale" {
		t.Errorf("scale kind %q", scale.GetKind())
	}
	if _, err := dbs.Patch(ctx, "db0", "application/merge-patch+json", []byte(`{"spec":{"replicas":4}}`), metav1.PatchOptions{}, "scale"); err != nil {
		t.Fatalf("patch scale: %v", err)
	}
	got, _ = dbs.Get(ctx, "db0", metav1.GetOptions{})
	if n, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas"); n != 4 {
		t.Errorf("replicas after scale = %d", n)
	}

	// Label selectors and paging.
	gold, err := dbs.List(ctx, metav1.ListOptions{LabelSelector: "tier=gold"})
	if err != nil || len(gold.Items) != 3 {
		t.Fatalf("tier=gold: %v, %d items", err, len(gold.Items))
	}
	var names []string
	opts := metav1.ListOptions{Limit: 2}
	for {
		page, err := dbs.List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			names = append(names, it.GetName())
		}
		if page.GetContinue() == "" {
			break
		}
		opts.Continue = page.GetContinue()
	}
	if len(names) != 5 {
		t.Errorf("paged list = %v", names)
	}

	// Watch from the list's resourceVersion.
	w, err := dbs.Watch(ctx, metav1.ListOptions{ResourceVersion: gold.GetResourceVersion(), FieldSelector: "metadata.name=db1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := dbs.Delete(ctx, "db1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var ev watch.Event
	for ev = range w.ResultChan() {
		if ev.Type == watch.Deleted {
			break
		}
	}
	w.Stop()
	if ev.Type != watch.Deleted || ev.Object.(*unstructured.Unstructured).GetName() != "db1" {
		t.Errorf("watch event %v %v", ev.Type, ev.Object)
	}
	rec.waitFor(t, "delete/db1")

	// Deleting the CRD removes its objects and stops serving them.
	close(stop)
	factory.Shutdown()
	stop = make(chan struct{})
	dw, err := cs.ApiextensionsV1().CustomResourceDefinitions().Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=databases.db.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, "databases.db.example.com", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for done := false; !done; {
		select {
		case ev := <-dw.ResultChan():
			done = ev.Type == watch.Deleted
		case <-deadline:
			t.Fatal("CRD not deleted")
		}
	}
	dw.Stop()
	// Served until the server's own watch of CRDs shows the deletion.
	for _, err := dbs.List(ctx, metav1.ListOptions{}); !apierrors.IsNotFound(err); _, err = dbs.List(ctx, metav1.ListOptions{}) {
		select {
		case <-deadline:
			t.Fatalf("list after CRD delete: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
}
