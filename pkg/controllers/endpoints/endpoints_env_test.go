//lint:file-ignore SA1019 core/v1 Endpoints is deprecated but served and maintained, as kube-controller-manager 1.37 still does

package endpoints

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controllers/nodesim"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/testenv"
)

func startEnv(t *testing.T) *testenv.Env {
	t.Helper()
	return testenv.Start(t, testenv.WithController(Name, func(ctx context.Context, env *testenv.Env) error {
		logger := slog.New(slog.DiscardHandler)
		f, err := informers.New(informers.Config{Client: env.Client, Logger: logger})
		if err != nil {
			return err
		}
		defer f.Shutdown()
		c, err := New(Config{Client: env.Client, Informers: f, Logger: logger})
		if err != nil {
			return err
		}
		sim, err := nodesim.New(nodesim.Config{Nodes: 1, Client: env.Client, Informers: f, Logger: logger})
		if err != nil {
			return err
		}
		f.Start(ctx)
		errc := make(chan error, 1)
		go func() { errc <- sim.Run(ctx, 2) }()
		return errors.Join(c.Run(ctx, 2), <-errc)
	}))
}

func readyCount(ep *corev1.Endpoints) int {
	n := 0
	for _, ss := range ep.Subsets {
		n += len(ss.Addresses)
	}
	return n
}

func TestEnvEndpointsFollowPods(t *testing.T) {
	t.Parallel()
	env := startEnv(t)
	ctx := t.Context()
	const ns = "default"
	pods := client.NewResource(env.Client, client.Pods).Namespace(ns)
	for _, name := range []string{"web-1", "web-2"} {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}}}},
		}
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	svcs := client.NewResource(env.Client, client.Services).Namespace(ns)
	if _, err := svcs.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"team": "a"}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ep := testenv.WaitFor(t, env, client.Endpoints, ns+"/web", func(ep *corev1.Endpoints) bool { return readyCount(ep) == 2 })
	if ep.Labels["team"] != "a" || ep.Subsets[0].Ports[0].Port != 8080 {
		t.Errorf("endpoints %+v: want the service's labels and the pods' http port", ep)
	}

	if err := pods.Delete(ctx, "web-1", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, env, client.Endpoints, ns+"/web", func(ep *corev1.Endpoints) bool { return readyCount(ep) == 1 })

	// Deleted while the Service exists: made again.
	eps := client.NewResource(env.Client, client.Endpoints).Namespace(ns)
	if err := eps.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, env, client.Endpoints, ns+"/web", func(ep *corev1.Endpoints) bool { return readyCount(ep) == 1 })

	// The Service goes: so do its Endpoints.
	if err := svcs.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitForDeletion(t, env, client.Endpoints, ns+"/web")

	// The Endpoints of a Service without a selector (as the API server's
	// own "kubernetes" Service) are left to whoever writes them.
	if _, err := svcs.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "manual"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	manual, err := eps.Create(ctx, &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: "manual"},
		Subsets:    []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "192.168.1.1"}}, Ports: []corev1.EndpointPort{{Port: 80, Protocol: corev1.ProtocolTCP}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A marker Service with a selector, synced after "manual" was seen.
	if _, err := svcs.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "marker"},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "none"}, Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, env, client.Endpoints, ns+"/marker", func(*corev1.Endpoints) bool { return true })
	got, err := eps.Get(ctx, "manual", metav1.GetOptions{})
	if err != nil || got.ResourceVersion != manual.ResourceVersion {
		t.Errorf("the endpoints of a service without a selector were touched: %v, %v", got, err)
	}
}
