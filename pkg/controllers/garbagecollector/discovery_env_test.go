package garbagecollector

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

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

func gadgetCRD() *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Kind: "Gadget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve}}}},
		},
	}
}

func testDeployment(name string, owners ...metav1.OwnerReference) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: owners}}
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
	d.Spec.Template.Labels = labels
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "nginx"}}
	return d
}

// A collector left to discovery (no fixed Resources) follows
// CustomResourceDefinitions installed, deleted and installed again while it
// runs, with no periodic round to help (the period is an hour): their
// objects are collected and collect across built-in kinds in every
// propagation mode, and a CRD deleted under its monitor takes the objects
// its custom resources owned with it.
func TestEnvDiscoveryFollowsCRDs(t *testing.T) {
	gadgetGVR := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}
	gcs := make(chan *GarbageCollector, 1)
	env := testenv.Start(t, testenv.WithController(Name, func(ctx context.Context, env *testenv.Env) error {
		logger := slog.New(slog.DiscardHandler)
		f, err := informers.New(informers.Config{Client: env.Client, Logger: logger})
		if err != nil {
			return err
		}
		defer f.Shutdown()
		gc, err := New(Config{Client: env.Client, Informers: f, Logger: logger, DiscoveryPeriod: time.Hour})
		if err != nil {
			return err
		}
		gcs <- gc
		f.Start(ctx)
		return gc.Run(ctx, 2)
	}))
	gc := <-gcs
	ctx := t.Context()
	ns := env.Namespace(t)
	gadgets := client.Resource[*unstructured.Unstructured]{GroupVersionResource: gadgetGVR, Kind: "Gadget", Namespaced: true}
	gcl := client.NewResource(env.Client, gadgets).Namespace(ns)
	deps := client.NewResource(env.Client, client.Deployments).Namespace(ns)
	cms := client.NewResource(env.Client, client.ConfigMaps).Namespace(ns)
	monitored := func(want bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for slices.Contains(gc.Monitored(), gadgetGVR) != want {
			if time.Now().After(deadline) {
				t.Fatalf("gadgets monitored = %v, want %v; monitored: %v", !want, want, gc.Monitored())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	newGadget := func(name string, owners ...metav1.OwnerReference) *unstructured.Unstructured {
		t.Helper()
		g := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": map[string]any{"name": name}}}
		g.SetOwnerReferences(owners)
		got, err := gcl.Create(ctx, g, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	newDeployment := func(name string, owners ...metav1.OwnerReference) *appsv1.Deployment {
		t.Helper()
		got, err := deps.Create(ctx, testDeployment(name, owners...), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	gadgetRef := func(g metav1.Object, block bool) metav1.OwnerReference {
		return ref("Gadget", "example.com/v1", g, block)
	}
	// inGraph waits until the collector's graph holds obj. Informers of
	// different resources are not ordered: an owner deleted right after
	// its dependent was created may be seen deleting first, and then
	// (as in Kubernetes) its orphaning has no dependent to spare.
	inGraph := func(obj metav1.Object) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			if n, ok := gc.builder.graph.get(obj.GetUID()); ok && gc.builder.graph.state(n).observed {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never in the graph", obj.GetName())
			}
			time.Sleep(time.Millisecond)
		}
	}

	monitored(false)
	if err := testenv.InstallCRDs(ctx, env.Client, gadgetCRD()); err != nil {
		t.Fatal(err)
	}
	monitored(true)

	// Background: a Deployment owns a Gadget.
	web := newDeployment("web")
	newGadget("of-web", ref("Deployment", "apps/v1", web, false))
	background := metav1.DeletePropagationBackground
	if err := deps.Delete(ctx, "web", metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitForDeletion(t, env, gadgets, ns+"/of-web")

	// Foreground: a Gadget owns a Deployment, which goes first.
	fg := newGadget("fg")
	newDeployment("of-fg", gadgetRef(fg, true))
	foreground := metav1.DeletePropagationForeground
	if err := gcl.Delete(ctx, "fg", metav1.DeleteOptions{PropagationPolicy: &foreground}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitForDeletion(t, env, client.Deployments, ns+"/of-fg")
	testenv.WaitForDeletion(t, env, gadgets, ns+"/fg")

	// Orphan: a Gadget's ConfigMap stays, without its reference.
	orph := newGadget("orphaner")
	kept, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept", OwnerReferences: []metav1.OwnerReference{gadgetRef(orph, false)}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	inGraph(kept)
	orphan := metav1.DeletePropagationOrphan
	if err := gcl.Delete(ctx, "orphaner", metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitForDeletion(t, env, gadgets, ns+"/orphaner")
	testenv.WaitFor(t, env, client.ConfigMaps, ns+"/kept", func(cm *corev1.ConfigMap) bool { return len(cm.OwnerReferences) == 0 })

	// The CRD goes while its monitor runs: its Gadgets are deleted, and
	// the Deployment one owned is collected; the monitor stops.
	owner := newGadget("owner")
	newDeployment("of-owner", gadgetRef(owner, false))
	crds := client.NewResource(env.Client, testenv.CustomResourceDefinitions)
	if err := crds.Delete(ctx, "gadgets.example.com", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitForDeletion(t, env, client.Deployments, ns+"/of-owner")
	testenv.WaitForDeletion(t, env, testenv.CustomResourceDefinitions, "gadgets.example.com")
	monitored(false)

	// Installed again, it is monitored again.
	if err := testenv.InstallCRDs(ctx, env.Client, gadgetCRD()); err != nil {
		t.Fatal(err)
	}
	monitored(true)
	again := newGadget("again")
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "of-again", OwnerReferences: []metav1.OwnerReference{gadgetRef(again, false)}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := gcl.Delete(ctx, "again", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitForDeletion(t, env, client.ConfigMaps, ns+"/of-again")
}
