package controllermanager_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/apiserver"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controllermanager"
	"github.com/kplane/kplane/pkg/storage/memory"
	"github.com/kplane/kplane/pkg/testenv"
)

// A manager runs the default controllers plus two simulated nodes; once
// it leads, a Deployment of 3 becomes 3 ready pods.
func ExampleNew() {
	backend, _ := memory.New(memory.Config{})
	defer backend.Close()
	srv, _ := apiserver.New(apiserver.Config{Backend: backend, Logger: slog.New(slog.DiscardHandler)})
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	c, _ := client.New(client.Config{Host: hs.URL, HTTPClient: &http.Client{Transport: transport}})

	m, err := controllermanager.New(controllermanager.Config{
		Client:      c,
		Controllers: []string{"*", controllermanager.NodeSimulator},
		Nodes:       2,
		Logger:      slog.New(slog.DiscardHandler),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.Controllers())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() { cancel(); <-done }()

	replicas := int32(3)
	labels := map[string]string{"app": "web"}
	_, err = client.NewResource(c, client.Deployments).Namespace("default").Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	d, err := testenv.Wait(wctx, c, client.Deployments, "default/web", func(d *appsv1.Deployment) bool {
		return d.Status.ReadyReplicas == 3
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d/%d ready\n", d.Status.ReadyReplicas, *d.Spec.Replicas)
	// Output:
	// [deployment replicaset statefulset garbagecollector namespace clusterrole-aggregation podgc disruption resourcequota replicationcontroller endpointslice endpoint serviceaccount daemonset job cronjob ttl-after-finished nodesim]
	// 3/3 ready
}
