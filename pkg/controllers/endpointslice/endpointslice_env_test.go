package endpointslice

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/kplane/kplane/internal/podendpoint"
	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controllers/deployment"
	"github.com/kplane/kplane/pkg/controllers/garbagecollector"
	"github.com/kplane/kplane/pkg/controllers/nodesim"
	"github.com/kplane/kplane/pkg/controllers/replicaset"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/testenv"
)

// runner is a controller the env runs.
type runner interface {
	Run(ctx context.Context, workers int) error
}

// startEnv runs the EndpointSlice controller with the Deployment,
// ReplicaSet and garbage collector controllers and two simulated nodes.
func startEnv(t *testing.T) *testenv.Env {
	t.Helper()
	return testenv.Start(t, testenv.WithController(Name, func(ctx context.Context, env *testenv.Env) error {
		logger := slog.New(slog.DiscardHandler)
		f, err := informers.New(informers.Config{Client: env.Client, Logger: logger})
		if err != nil {
			return err
		}
		defer f.Shutdown()
		var rs []runner
		add := func(r runner, err error) error {
			rs = append(rs, r)
			return err
		}
		if err := errors.Join(
			add(New(Config{Client: env.Client, Informers: f, Logger: logger})),
			add(deployment.New(deployment.Config{Client: env.Client, Informers: f, Logger: logger})),
			add(replicaset.New(replicaset.Config{Client: env.Client, Informers: f, Logger: logger})),
			add(garbagecollector.New(garbagecollector.Config{Client: env.Client, Informers: f, Logger: logger})),
			add(nodesim.New(nodesim.Config{Nodes: 2, Client: env.Client, Informers: f, Logger: logger})),
		); err != nil {
			return err
		}
		f.Start(ctx)
		var wg sync.WaitGroup
		errs := make([]error, len(rs))
		for i, r := range rs {
			wg.Go(func() { errs[i] = r.Run(ctx, 2) })
		}
		wg.Wait()
		return errors.Join(errs...)
	}))
}

// waitList waits until cond holds for the objects of res in namespace
// ns that sel selects, listing and then watching, relisting when a watch
// ends; it fails the test after a minute.
func waitList[T cache.Object](t *testing.T, env *testenv.Env, res client.Resource[T], ns string, sel labels.Selector, what string, cond func(map[string]T) bool) map[string]T {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rc := client.NewResource(env.Client, res).Namespace(ns)
	opts := metav1.ListOptions{LabelSelector: sel.String()}
	for {
		l, err := rc.List(ctx, opts)
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		objs := map[string]T{}
		for _, o := range l.Items {
			objs[o.GetName()] = o
		}
		if cond(objs) {
			return objs
		}
		w, err := rc.Watch(ctx, metav1.ListOptions{LabelSelector: sel.String(), ResourceVersion: l.ResourceVersion})
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		for ev := range w.ResultChan() {
			switch ev.Type {
			case watch.Added, watch.Modified:
				objs[ev.Object.GetName()] = ev.Object
			case watch.Deleted:
				delete(objs, ev.Object.GetName())
			default:
				continue
			}
			if cond(objs) {
				w.Stop()
				return objs
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			t.Fatalf("waiting for %s: %v; last state %v", what, ctx.Err(), objs)
		}
	}
}

func readyIPs(sls map[string]*discoveryv1.EndpointSlice) []string {
	var ips []string
	for _, sl := range sls {
		for _, ep := range sl.Endpoints {
			if ptr.Deref(ep.Conditions.Ready, false) {
				ips = append(ips, ep.Addresses...)
			}
		}
	}
	slices.Sort(ips)
	return ips
}

func TestEnvDeploymentBehindService(t *testing.T) {
	t.Parallel()
	env := startEnv(t)
	ctx := t.Context()
	const ns = "default"
	sel := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "web", Image: "nginx",
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				}}},
			},
		},
	}
	deps := client.NewResource(env.Client, client.Deployments)
	if _, err := deps.Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// What `kubectl expose deployment web --port 80 --target-port http` makes.
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec:       corev1.ServiceSpec{Selector: sel, Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")}}},
	}
	svcs := client.NewResource(env.Client, client.Services)
	if _, err := svcs.Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := client.NewResource(env.Client, client.Pods).Namespace(ns)
	readyPodIPs := func() []string {
		l, err := pods.List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(sel).String()})
		if err != nil {
			t.Fatal(err)
		}
		var ips []string
		for _, p := range l.Items {
			if p.DeletionTimestamp == nil && podendpoint.IsPodReady(p) && p.Status.PodIP != "" {
				ips = append(ips, p.Status.PodIP)
			}
		}
		slices.Sort(ips)
		return ips
	}
	sliceSel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: "web"})
	waitReady := func(what string, n int) {
		t.Helper()
		sls := waitList(t, env, client.EndpointSlices, ns, sliceSel, what, func(sls map[string]*discoveryv1.EndpointSlice) bool {
			got := readyIPs(sls)
			return len(got) == n && cmp.Equal(got, readyPodIPs())
		})
		for _, sl := range sls {
			if sl.Labels[discoveryv1.LabelManagedBy] != ControllerName {
				t.Errorf("slice %s managed by %q", sl.Name, sl.Labels[discoveryv1.LabelManagedBy])
			}
			if want := []discoveryv1.EndpointPort{{Name: ptr.To(""), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}}; !cmp.Equal(want, sl.Ports) {
				t.Errorf("slice %s ports %v, want the container's http port", sl.Name, sl.Ports)
			}
		}
	}
	waitReady("the 3 ready pods", 3)

	scale := func(n int32) {
		t.Helper()
		for {
			cur, err := deps.Namespace(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cur.Spec.Replicas = &n
			_, err = deps.Update(ctx, cur, metav1.UpdateOptions{})
			if err == nil {
				return
			}
			// The controllers write the Deployment's status meanwhile.
			if !apierrors.IsConflict(err) {
				t.Fatal(err)
			}
		}
	}
	scale(5)
	waitReady("5 ready pods after scaling up", 5)
	scale(2)
	waitReady("2 ready pods after scaling down", 2)

	// A pod deleted is replaced; the slice follows.
	l, err := pods.List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(sel).String()})
	if err != nil {
		t.Fatal(err)
	}
	gone := l.Items[0].Name
	if err := pods.Delete(ctx, gone, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitList(t, env, client.EndpointSlices, ns, sliceSel, "the deleted pod gone and its replacement ready", func(sls map[string]*discoveryv1.EndpointSlice) bool {
		for _, sl := range sls {
			for _, ep := range sl.Endpoints {
				if ep.TargetRef != nil && ep.TargetRef.Name == gone {
					return false
				}
			}
		}
		return len(readyIPs(sls)) == 2 && cmp.Equal(readyIPs(sls), readyPodIPs())
	})

	// The Service goes: its slices are garbage collected.
	if err := svcs.Namespace(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitList(t, env, client.EndpointSlices, ns, sliceSel, "no slices", func(sls map[string]*discoveryv1.EndpointSlice) bool { return len(sls) == 0 })
}
