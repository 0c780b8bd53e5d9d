package nodesim_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/apiserver"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controllers/nodesim"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/storage/memory"
	"github.com/kplane/kplane/pkg/testenv"
)

// A pod created against an API server with a node simulator running is
// scheduled and runs.
func ExampleNew() {
	backend, _ := memory.New(memory.Config{})
	defer backend.Close()
	srv, _ := apiserver.New(apiserver.Config{Backend: backend})
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	c, _ := client.New(client.Config{Host: hs.URL, HTTPClient: &http.Client{Transport: transport}})

	logger := slog.New(slog.DiscardHandler)
	f, _ := informers.New(informers.Config{Client: c, Logger: logger})
	sim, err := nodesim.New(nodesim.Config{Nodes: 1, Client: c, Informers: f, Logger: logger})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	f.Start(ctx)
	wg.Go(func() { _ = sim.Run(ctx, 1) })
	defer func() { cancel(); wg.Wait(); f.Shutdown() }()

	_, err = client.NewResource(c, client.Pods).Namespace("default").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	pod, err := testenv.Wait(wctx, c, client.Pods, "default/web", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(pod.Spec.NodeName, pod.Status.Phase, pod.Status.PodIP)
	// Output: kplane-node-0 Running 10.244.0.2
}
