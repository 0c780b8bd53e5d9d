package compat

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/testenv"
)

const appCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: apps.compat.example.com}
spec:
  group: compat.example.com
  scope: Namespaced
  names: {plural: apps, kind: App, listKind: AppList, singular: app}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [image]
            properties:
              image: {type: string}
              replicas: {type: integer, default: 1}
          status:
            type: object
            properties:
              deployment: {type: string}
`

var appGV = schema.GroupVersion{Group: "compat.example.com", Version: "v1"}

// App is an operator's Go type for apps.compat.example.com.
type App struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              AppSpec   `json:"spec"`
	Status            AppStatus `json:"status,omitempty"`
}

type AppSpec struct {
	Image    string `json:"image"`
	Replicas *int32 `json:"replicas,omitempty"`
}

type AppStatus struct {
	Deployment string `json:"deployment,omitempty"`
}

func (a *App) DeepCopyObject() runtime.Object {
	cp := *a
	cp.ObjectMeta = *a.ObjectMeta.DeepCopy()
	if a.Spec.Replicas != nil {
		cp.Spec.Replicas = ptr.To(*a.Spec.Replicas)
	}
	return &cp
}

type AppList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []App `json:"items"`
}

func (l *AppList) DeepCopyObject() runtime.Object {
	cp := *l
	cp.Items = make([]App, len(l.Items))
	for i := range l.Items {
		cp.Items[i] = *l.Items[i].DeepCopyObject().(*App)
	}
	return &cp
}

// TestControllerRuntimeCRDReconcilers runs, unchanged, two
// controller-runtime controllers of a CRD installed from a directory: a
// typed one that owns a Deployment (Owns) and writes status, and an
// unstructured one that labels the same objects.
func TestControllerRuntimeCRDReconcilers(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(appCRD), 0o600); err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	scheme.AddKnownTypes(appGV, &App{}, &AppList{})
	metav1.AddToGroupVersion(scheme, appGV)

	runManager := func(ctx context.Context, env *testenv.Env) error {
		mgr, err := ctrl.NewManager(envRESTConfig(env), ctrl.Options{
			Scheme:                 scheme,
			Metrics:                metricsserver.Options{BindAddress: "0"},
			HealthProbeBindAddress: "0",
		})
		if err != nil {
			return err
		}
		c := mgr.GetClient()
		err = ctrl.NewControllerManagedBy(mgr).
			For(&App{}).
			Owns(&appsv1.Deployment{}).
			Named("compat-app").
			WithOptions(controller.Options{SkipNameValidation: ptr.To(true)}).
			Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
				var app App
				if err := c.Get(ctx, req.NamespacedName, &app); err != nil {
					return reconcile.Result{}, crclient.IgnoreNotFound(err)
				}
				dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: app.Name, Namespace: app.Namespace}}
				if _, err := controllerutil.CreateOrUpdate(ctx, c, dep, func() error {
					labels := map[string]string{"app": app.Name}
					dep.Spec.Replicas = app.Spec.Replicas
					dep.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
					dep.Spec.Template.Labels = labels
					dep.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app", Image: app.Spec.Image}}
					return controllerutil.SetControllerReference(&app, dep, scheme)
				}); err != nil {
					return reconcile.Result{}, err
				}
				if app.Status.Deployment != dep.Name {
					app.Status.Deployment = dep.Name
					return reconcile.Result{}, c.Status().Update(ctx, &app)
				}
				return reconcile.Result{}, nil
			}))
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(appGV.WithKind("App"))
		err = ctrl.NewControllerManagedBy(mgr).
			For(u).
			Named("compat-app-labeler").
			WithOptions(controller.Options{SkipNameValidation: ptr.To(true)}).
			Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
				obj := &unstructured.Unstructured{}
				obj.SetGroupVersionKind(appGV.WithKind("App"))
				if err := c.Get(ctx, req.NamespacedName, obj); err != nil {
					return reconcile.Result{}, crclient.IgnoreNotFound(err)
				}
				if obj.GetLabels()["seen"] == "true" {
					return reconcile.Result{}, nil
				}
				patch := []byte(`{"metadata":{"labels":{"seen":"true"}}}`)
				return reconcile.Result{}, c.Patch(ctx, obj, crclient.RawPatch("application/merge-patch+json", patch))
			}))
		if err != nil {
			return err
		}
		if err := mgr.Start(ctx); err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		return nil
	}
	env := testenv.Start(t, testenv.WithCRDsFromDir(dir), testenv.WithController("manager", runManager))

	apps := client.Resource[*App]{GroupVersionResource: appGV.WithResource("apps"), Kind: "App", Namespaced: true}
	app := &App{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "default"}, Spec: AppSpec{Image: "shop:1"}}
	if _, err := client.NewResource(env.Client, apps).Create(t.Context(), app, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := testenv.WaitFor(t, env, apps, "default/shop", func(a *App) bool {
		return a.Status.Deployment == "shop" && a.Labels["seen"] == "true"
	})
	if got.Spec.Replicas == nil || *got.Spec.Replicas != 1 {
		t.Errorf("spec.replicas not defaulted by the schema: %v", got.Spec.Replicas)
	}
	dep := testenv.WaitFor(t, env, client.Deployments, "default/shop", func(d *appsv1.Deployment) bool { return true })
	if ref := metav1.GetControllerOf(dep); ref == nil || ref.Kind != "App" || ref.APIVersion != "compat.example.com/v1" || ref.UID != got.UID {
		t.Fatalf("deployment owner = %+v", dep.OwnerReferences)
	}
	// A change of the Deployment (Owns) brings the owner back to the
	// reconciler, which restores its spec.
	dep.Spec.Template.Spec.Containers[0].Image = "tampered"
	if _, err := client.NewResource(env.Client, client.Deployments).Update(t.Context(), dep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, env, client.Deployments, "default/shop", func(d *appsv1.Deployment) bool {
		return d.Spec.Template.Spec.Containers[0].Image == "shop:1"
	})
}
