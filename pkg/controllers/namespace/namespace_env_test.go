package namespace

import (
	"context"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/testenv"
)

// startEnv starts a testenv server running the namespace controller on the
// real clock, syncing at once and rechecking remaining content every 20ms
// so that the test moves on quickly.
func startEnv(t *testing.T, opts ...testenv.Option) *testenv.Env {
	t.Helper()
	return testenv.Start(t, append(opts, testenv.WithController(Name, func(ctx context.Context, env *testenv.Env) error {
		logger := slog.New(slog.DiscardHandler)
		f, err := informers.New(informers.Config{Client: env.Client, Logger: logger})
		if err != nil {
			return err
		}
		defer f.Shutdown()
		c, err := New(Config{Client: env.Client, Informers: f, Logger: logger, RecheckInterval: 20 * time.Millisecond, SyncDelay: time.Millisecond})
		if err != nil {
			return err
		}
		f.Start(ctx)
		return c.Run(ctx, 2)
	}))...)
}

func condition(ns *corev1.Namespace, t corev1.NamespaceConditionType) *corev1.NamespaceCondition {
	for i := range ns.Status.Conditions {
		if ns.Status.Conditions[i].Type == t {
			return &ns.Status.Conditions[i]
		}
	}
	return nil
}

func TestEnvNamespaceDeletion(t *testing.T) {
	env := startEnv(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	cms := client.NewResource(env.Client, client.ConfigMaps).Namespace(ns)
	pods := client.NewResource(env.Client, client.Pods).Namespace(ns)
	namespaces := client.NewResource(env.Client, client.Namespaces)

	for _, name := range []string{"a", "b"} {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	held := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}}}
	if _, err := cms.Create(ctx, held, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A pod on a node is deleted gracefully: it stays until its node agent
	// (here the test) confirms it stopped.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec:       corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	if err := namespaces.Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := namespaces.Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.DeletionTimestamp == nil || got.Status.Phase != corev1.NamespaceTerminating {
		t.Fatalf("deleted namespace: deletionTimestamp %v phase %q", got.DeletionTimestamp, got.Status.Phase)
	}

	// No new content while it terminates.
	_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		t.Fatalf("create in a terminating namespace: %v", err)
	}

	// Plain content goes; the held configmap and the pod wait.
	testenv.WaitForDeletion(t, env, client.ConfigMaps, ns+"/a")
	testenv.WaitForDeletion(t, env, client.ConfigMaps, ns+"/b")
	testenv.WaitFor(t, env, client.Namespaces, ns, func(n *corev1.Namespace) bool {
		c := condition(n, corev1.NamespaceContentRemaining)
		f := condition(n, corev1.NamespaceFinalizersRemaining)
		return c != nil && c.Status == corev1.ConditionTrue &&
			c.Message == "Some resources are remaining: configmaps. has 1 resource instances, pods. has 1 resource instances" &&
			f != nil && f.Status == corev1.ConditionTrue &&
			f.Message == "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"
	})
	p := testenv.WaitFor(t, env, client.Pods, ns+"/p", func(p *corev1.Pod) bool { return p.DeletionTimestamp != nil })
	if p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds == 0 {
		t.Fatalf("pod deleted without grace: %v", p.DeletionGracePeriodSeconds)
	}
	zero := int64(0)
	if err := pods.Delete(ctx, "p", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, env, client.Namespaces, ns, func(n *corev1.Namespace) bool {
		c := condition(n, corev1.NamespaceContentRemaining)
		return c != nil && c.Message == "Some resources are remaining: configmaps. has 1 resource instances"
	})
	// The finalizer holds the namespace, however often it is looked at.
	cm, err := cms.Get(ctx, "held", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.DeletionTimestamp == nil {
		t.Fatal("held configmap not marked for deletion")
	}
	if n, err := namespaces.Get(ctx, ns, metav1.GetOptions{}); err != nil || len(n.Spec.Finalizers) != 1 {
		t.Fatalf("namespace before the finalizer went: %v %v", n, err)
	}

	cm.Finalizers = nil
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitForDeletion(t, env, client.Namespaces, ns)
}

func TestEnvEmptyNamespaceGoes(t *testing.T) {
	env := startEnv(t)
	ns := env.Namespace(t)
	if err := client.NewResource(env.Client, client.Namespaces).Delete(t.Context(), ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitForDeletion(t, env, client.Namespaces, ns)
}

// A terminating namespace's custom resources are deleted too: the
// controller finds their resource through discovery, including a CRD
// created after it started.
func TestEnvNamespaceDeletionCustomResources(t *testing.T) {
	env := startEnv(t)
	ctx := t.Context()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}}},
		},
	}
	if _, err := client.NewResource(env.Client, testenv.CustomResourceDefinitions).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, env, testenv.CustomResourceDefinitions, crd.Name, func(c *apiextensionsv1.CustomResourceDefinition) bool {
		return len(c.Status.Conditions) > 0 && c.Status.AcceptedNames.Kind == "Widget"
	})
	widgets := client.Resource[*unstructured.Unstructured]{GroupVersionResource: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, Kind: "Widget", Namespaced: true}
	ns := env.Namespace(t)
	for _, name := range []string{"a", "b"} {
		w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": name, "namespace": ns}}}
		if _, err := client.NewResource(env.Client, widgets).Namespace(ns).Create(ctx, w, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := client.NewResource(env.Client, client.Namespaces).Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitForDeletion(t, env, client.Namespaces, ns)
	testenv.WaitForDeletion(t, env, widgets, ns+"/a")
	testenv.WaitForDeletion(t, env, widgets, ns+"/b")
}
