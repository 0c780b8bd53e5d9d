package main

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/authorization/rbac/bootstrap"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/testenv"
)

// TestGrantManagerControllerRoles checks what `kplane up
// --use-service-account-credentials=false` does: the bootstrap policy
// alone does not let the manager's user write pods; after the grant it
// may, and granting again changes nothing.
func TestGrantManagerControllerRoles(t *testing.T) {
	env := testenv.Start(t, testenv.WithRBAC())
	ns := env.Namespace(t)
	mc, err := client.New(env.ConfigFor(bootstrap.KubeControllerManager).ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mc.CloseIdleConnections)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}
	ctx := context.Background()
	pods := client.NewResource(mc, client.Pods).Namespace(ns)
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("the manager's user created a pod without the grant: %v", err)
	}
	for range 2 {
		if err := grantManagerControllerRoles(ctx, env.Client); err != nil {
			t.Fatal(err)
		}
	}
	// The server's authorizer sees the bindings once its RBAC cache has
	// them: poll, with a deadline, until the pod is allowed.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		_, err := pods.Create(wctx, pod, metav1.CreateOptions{})
		if err == nil {
			return
		}
		if !apierrors.IsForbidden(err) {
			t.Fatalf("create a pod after the grant: %v", err)
		}
		select {
		case <-wctx.Done():
			t.Fatalf("the manager's user may not create pods after the grant: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
