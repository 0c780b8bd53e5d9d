package compat

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// TestControllerRuntimeClient drives kplane with controller-runtime's
// client, which finds resources through discovery (its REST mapper).
func TestControllerRuntimeClient(t *testing.T) {
	ctx := context.Background()
	srv := startServer(t)
	c, err := crclient.New(srv.restConfig(), crclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cfg", Labels: map[string]string{"a": "b"}},
		Data: map[string]string{"k": "v"}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatalf("create: %v", err)
	}
	var got corev1.ConfigMap
	if err := c.Get(ctx, crclient.ObjectKey{Namespace: "default", Name: "cfg"}, &got); err != nil || got.Data["k"] != "v" {
		t.Fatalf("get: %+v, %v", got, err)
	}
	var list corev1.ConfigMapList
	if err := c.List(ctx, &list, crclient.InNamespace("default"), crclient.MatchingLabels{"a": "b"}); err != nil || len(list.Items) != 1 {
		t.Fatalf("list: %d items, %v", len(list.Items), err)
	}
	before := got.DeepCopy()
	got.Data["k"] = "w"
	if err := c.Patch(ctx, &got, crclient.MergeFrom(before)); err != nil {
		t.Fatalf("merge patch: %v", err)
	}
	before.Data["k"] = "stale"
	if err := c.Update(ctx, before); !apierrors.IsConflict(err) {
		t.Errorf("stale update: %v, want Conflict", err)
	}
	dep := deployment("web", 2)
	dep.Namespace = "default"
	if err := c.Create(ctx, dep); err != nil {
		t.Fatalf("create deployment: %v", err)
	}
	dep.Status.Replicas = 2
	if err := c.Status().Update(ctx, dep); err != nil {
		t.Fatalf("status update: %v", err)
	}
	if err := c.Delete(ctx, &got); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := c.Get(ctx, crclient.ObjectKeyFromObject(&got), &got); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: %v, want NotFound", err)
	}
}

// TestControllerRuntimeManager runs a controller-runtime manager with one
// controller on kplane: its cache must sync and the reconciler must see
// the objects and write through the client.
func TestControllerRuntimeManager(t *testing.T) {
	srv := startServer(t)
	mgr, err := ctrl.NewManager(srv.restConfig(), ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	reconciled := map[string]int{}
	wake := make(chan struct{}, 1)
	err = ctrl.NewControllerManagedBy(mgr).
		For(&appsv1.Deployment{}).
		Named("compat-annotator").
		// Controller names are process-global in controller-runtime; allow
		// the test to run more than once (-count).
		WithOptions(controller.Options{SkipNameValidation: ptr.To(true)}).
		Complete(reconcilerFunc(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
			var d appsv1.Deployment
			if err := mgr.GetClient().Get(ctx, req.NamespacedName, &d); err != nil {
				return ctrl.Result{}, crclient.IgnoreNotFound(err)
			}
			if d.Annotations["compat/seen"] != "true" {
				patch := []byte(`{"metadata":{"annotations":{"compat/seen":"true"}}}`)
				if err := mgr.GetClient().Patch(ctx, &d, crclient.RawPatch(types.MergePatchType, patch)); err != nil {
					return ctrl.Result{}, err
				}
			}
			mu.Lock()
			reconciled[req.Name]++
			mu.Unlock()
			select {
			case wake <- struct{}{}:
			default:
			}
			return ctrl.Result{}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("manager: %v", err)
		}
	}()

	cs := srv.clientset(t)
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, deployment("web", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(30 * time.Second)
	for {
		d, err := cs.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		n := reconciled["web"]
		mu.Unlock()
		if d.Annotations["compat/seen"] == "true" && n > 0 {
			break
		}
		select {
		case <-wake:
		case <-deadline:
			t.Fatalf("the controller never annotated the deployment (reconciled %d times)", n)
		}
	}
}

type reconcilerFunc func(context.Context, ctrl.Request) (ctrl.Result, error)

func (f reconcilerFunc) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return f(ctx, req)
}
