package informers_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	testclock "k8s.io/utils/clock/testing"

	"github.com/kplane/kplane/pkg/cache"
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

// countingLW counts the lists and watches it serves.
type countingLW[T cache.Object] struct {
	next  cache.ListerWatcher[T]
	calls *atomic.Int64
}

func (c countingLW[T]) List(ctx context.Context, opts metav1.ListOptions) (*cache.List[T], error) {
	c.calls.Add(1)
	return c.next.List(ctx, opts)
}

func (c countingLW[T]) Watch(ctx context.Context, opts metav1.ListOptions) (cache.Watch[T], error) {
	c.calls.Add(1)
	return c.next.Watch(ctx, opts)
}

// An informer of a custom resource whose CRD is not installed reports the
// server's NotFound as why it has not synced, asks nothing more until its
// backoff ends on the clock (it does not spin), and syncs at the next try
// once the CRD is installed, watch-list included.
func TestInformerOfResourceNotServedYet(t *testing.T) {
	env := testenv.Start(t)
	clk := testclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	f := newFactory(t, informers.Config{Client: env.Client, Clock: clk})
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	var calls atomic.Int64
	m := client.NewMetadata(env.Client)
	inf, err := informers.For(f, widgets, func(ns string) cache.ListerWatcher[*metav1.PartialObjectMetadata] {
		return countingLW[*metav1.PartialObjectMetadata]{next: m.Resource(widgets).Namespace(ns).ListerWatcher(), calls: &calls}
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.Start(ctx)

	waitUntil(t, "the informer waits on its backoff", clk.HasWaiters)
	why, listed := f.NotSynced()[widgets]
	if !listed || !apierrors.IsNotFound(why) {
		t.Fatalf("NotSynced()[widgets] = %v (listed %v), want a NotFound", why, listed)
	}
	if !apierrors.IsNotFound(inf.LastSyncError()) {
		t.Fatalf("LastSyncError() = %v, want a NotFound", inf.LastSyncError())
	}
	tried := calls.Load()
	if tried == 0 || tried > 2 {
		t.Fatalf("%d requests before backing off, want 1 or 2 (watch-list, list)", tried)
	}

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
	if err := testenv.InstallCRDs(ctx, env.Client, crd); err != nil {
		t.Fatal(err)
	}
	w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w1", "namespace": "default"}}}
	if _, err := client.NewDynamic(env.Client).Resource(widgets).Namespace("default").Create(ctx, w, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := calls.Load(); got != tried {
		t.Fatalf("%d requests while the clock stood still, want %d", got, tried)
	}
	clk.Step(time.Minute)
	waitUntil(t, "the informer syncs", inf.HasSynced)
	waitUntil(t, "w1 is cached", func() bool { _, err := inf.Lister().Get("default/w1"); return err == nil })
	if err := inf.LastSyncError(); err != nil {
		t.Errorf("LastSyncError() = %v after syncing", err)
	}
	if ns := f.NotSynced(); len(ns) != 0 {
		t.Errorf("NotSynced() = %v after syncing", ns)
	}
}

// waitUntil polls cond until it holds, failing the test after a while.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
