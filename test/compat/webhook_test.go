package compat

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/testenv"
)

// The webhook manifests of an operator, as kubebuilder generates them
// (config/webhook/manifests.yaml): the service is rewritten by testenv.
const appWebhooks = `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: mutating-webhook-configuration}
webhooks:
- name: mapp.compat.example.com
  admissionReviewVersions: [v1]
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /mutate-compat-example-com-v1-app}
  rules:
  - {apiGroups: [compat.example.com], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [apps]}
  sideEffects: None
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: validating-webhook-configuration}
webhooks:
- name: vapp.compat.example.com
  admissionReviewVersions: [v1]
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /validate-compat-example-com-v1-app}
  rules:
  - {apiGroups: [compat.example.com], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [apps]}
  sideEffects: None
`

type appDefaulter struct{}

func (appDefaulter) Default(_ context.Context, a *App) error {
	if a.Labels == nil {
		a.Labels = map[string]string{}
	}
	a.Labels["defaulted-by"] = "webhook"
	if a.Spec.Replicas == nil || *a.Spec.Replicas == 1 {
		a.Spec.Replicas = ptr.To(int32(2))
	}
	return nil
}

type appValidator struct{}

func (appValidator) ValidateCreate(_ context.Context, a *App) (admission.Warnings, error) {
	if strings.HasSuffix(a.Spec.Image, ":latest") {
		return nil, fmt.Errorf("image %q: pin a version", a.Spec.Image)
	}
	return admission.Warnings{"apps are checked by the compat webhook"}, nil
}

func (v appValidator) ValidateUpdate(ctx context.Context, _, a *App) (admission.Warnings, error) {
	return v.ValidateCreate(ctx, a)
}

func (appValidator) ValidateDelete(context.Context, *App) (admission.Warnings, error) {
	return nil, nil
}

// TestControllerRuntimeWebhooksThroughTestenv serves an operator's
// defaulting and validating webhooks with controller-runtime's builder and
// webhook server on testenv's webhook port, as envtest users do: kplane
// calls them on creates of the custom resource.
func TestControllerRuntimeWebhooksThroughTestenv(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(appCRD), 0o600); err != nil {
		t.Fatal(err)
	}
	hooks := filepath.Join(t.TempDir(), "manifests.yaml")
	if err := os.WriteFile(hooks, []byte(appWebhooks), 0o600); err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	scheme.AddKnownTypes(appGV, &App{}, &AppList{})
	metav1.AddToGroupVersion(scheme, appGV)

	started := make(chan struct{})
	runManager := func(ctx context.Context, env *testenv.Env) error {
		mgr, err := ctrl.NewManager(envRESTConfig(env), ctrl.Options{
			Scheme:                 scheme,
			Metrics:                metricsserver.Options{BindAddress: "0"},
			HealthProbeBindAddress: "0",
			WebhookServer: webhook.NewServer(webhook.Options{
				Host: env.Webhook.Host, Port: env.Webhook.Port, CertDir: env.Webhook.CertDir,
			}),
		})
		if err != nil {
			return err
		}
		if err := ctrl.NewWebhookManagedBy(mgr, &App{}).WithDefaulter(appDefaulter{}).WithValidator(appValidator{}).Complete(); err != nil {
			return err
		}
		go func() {
			// The webhook server answers once it listens.
			for ctx.Err() == nil {
				if mgr.GetWebhookServer().StartedChecker()(nil) == nil {
					close(started)
					return
				}
				select {
				case <-ctx.Done():
				case <-time.After(10 * time.Millisecond):
				}
			}
		}()
		if err := mgr.Start(ctx); err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		return nil
	}
	env := testenv.Start(t, testenv.WithCRDsFromDir(dir), testenv.WithWebhooksFromDir(hooks), testenv.WithController("manager", runManager))
	select {
	case <-started:
	case <-time.After(time.Minute):
		t.Fatal("the webhook server did not start")
	}
	apps := client.NewResource(env.Client, client.Resource[*App]{GroupVersionResource: appGV.WithResource("apps"), Kind: "App", Namespaced: true})
	got, err := apps.Create(t.Context(), &App{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "default"}, Spec: AppSpec{Image: "shop:1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["defaulted-by"] != "webhook" || got.Spec.Replicas == nil || *got.Spec.Replicas != 2 {
		t.Fatalf("the defaulting webhook's patch was not applied: labels %v replicas %v", got.Labels, got.Spec.Replicas)
	}
	_, err = apps.Create(t.Context(), &App{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: "default"}, Spec: AppSpec{Image: "shop:latest"}}, metav1.CreateOptions{})
	want := `admission webhook "vapp.compat.example.com" denied the request: image "shop:latest": pin a version`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("create of an invalid app = %v, want %q", err, want)
	}
	if _, err := apps.Namespace("default").Get(t.Context(), "bad", metav1.GetOptions{}); err == nil {
		t.Fatal("a denied app was stored")
	}
}
