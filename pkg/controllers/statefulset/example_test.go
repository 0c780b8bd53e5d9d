package statefulset_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/apiserver"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controllers/nodesim"
	"github.com/kplane/kplane/pkg/controllers/statefulset"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/storage/memory"
	"github.com/kplane/kplane/pkg/testenv"
)

// The StatefulSet controller and the node simulator share one informer
// factory against an API server; a StatefulSet of 3 becomes the pods
// web-0, web-1 and web-2, created in that order, each once the one before
// is ready.
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
	ssc, err := statefulset.New(statefulset.Config{Client: c, Informers: f, Logger: logger})
	if err != nil {
		fmt.Println(err)
		return
	}
	sim, err := nodesim.New(nodesim.Config{Client: c, Informers: f, Logger: logger})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	f.Start(ctx)
	wg.Go(func() { _ = ssc.Run(ctx, 2) })
	wg.Go(func() { _ = sim.Run(ctx, 2) })
	defer func() { cancel(); wg.Wait(); f.Shutdown() }()

	replicas := int32(3)
	_, err = client.NewResource(c, client.StatefulSets).Namespace("default").Create(ctx, &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    &replicas,
			ServiceName: "web",
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
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
	set, err := testenv.Wait(wctx, c, client.StatefulSets, "default/web", func(s *appsv1.StatefulSet) bool {
		return s.Status.ReadyReplicas == 3
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	pods, err := client.NewResource(c, client.Pods).Namespace("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	var names []string
	for _, p := range pods.Items {
		names = append(names, p.Spec.Hostname+"."+p.Spec.Subdomain)
	}
	slices.Sort(names)
	fmt.Printf("%d/%d ready: %v\n", set.Status.ReadyReplicas, *set.Spec.Replicas, names)
	// Output: 3/3 ready: [web-0.web web-1.web web-2.web]
}
