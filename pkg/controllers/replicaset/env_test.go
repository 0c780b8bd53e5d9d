package replicaset

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controller/record"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/testenv"
)

// harness is a testenv environment running the ReplicaSet controller (and
// whatever extra runs next to it), with clients scoped to one namespace.
type harness struct {
	t    *testing.T
	env  *testenv.Env
	ns   string
	rss  *client.ResourceClient[*appsv1.ReplicaSet]
	pods *client.ResourceClient[*corev1.Pod]
}

// extraRunner runs next to the controller on the same informer factory,
// until ctx ends.
type extraRunner func(ctx context.Context, env *testenv.Env, f *informers.Factory) (run func(ctx context.Context) error, err error)

func startHarness(t *testing.T, extras ...extraRunner) *harness {
	t.Helper()
	return startHarnessWith(t, clock.RealClock{}, extras...)
}

// startHarnessWith is startHarness with the controllers on clk.
func startHarnessWith(t *testing.T, clk clock.WithTickerAndDelayedExecution, extras ...extraRunner) *harness {
	t.Helper()
	env := testenv.Start(t, testenv.WithController(Name, func(ctx context.Context, env *testenv.Env) error {
		logger := slog.New(slog.DiscardHandler)
		f, err := informers.New(informers.Config{Client: env.Client, Logger: logger})
		if err != nil {
			return err
		}
		defer f.Shutdown()
		rec, err := record.New(record.Config{
			Sink:      record.ClientSink{Events: client.NewResource(env.Client, client.Events)},
			Component: Name,
			Logger:    logger,
		})
		if err != nil {
			return err
		}
		c, err := New(Config{Client: env.Client, Informers: f, Recorder: rec, Logger: logger, Clock: clk})
		if err != nil {
			return err
		}
		var runs []func(context.Context) error
		for _, x := range extras {
			run, err := x(ctx, env, f)
			if err != nil {
				return err
			}
			runs = append(runs, run)
		}
		f.Start(ctx)
		var wg sync.WaitGroup
		errs := make(chan error, len(runs)+1)
		wg.Go(func() { _ = rec.Run(ctx) })
		for _, run := range runs {
			wg.Go(func() { errs <- run(ctx) })
		}
		errs <- c.Run(ctx, 2)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				return err
			}
		}
		return nil
	}))
	ns := env.Namespace(t)
	return &harness{
		t:    t,
		env:  env,
		ns:   ns,
		rss:  client.NewResource(env.Client, client.ReplicaSets).Namespace(ns),
		pods: client.NewResource(env.Client, client.Pods).Namespace(ns),
	}
}

func (h *harness) createRS(name string, replicas int32) *appsv1.ReplicaSet {
	h.t.Helper()
	return h.createRSWith(name, replicas, func(*appsv1.ReplicaSet) {})
}

func (h *harness) createRSWith(name string, replicas int32, edit func(*appsv1.ReplicaSet)) *appsv1.ReplicaSet {
	h.t.Helper()
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}},
			},
		},
	}
	edit(rs)
	created, err := h.rss.Create(h.t.Context(), rs, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return created
}

func (h *harness) scale(name string, replicas int32) {
	h.t.Helper()
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas)
	if _, err := h.rss.Patch(h.t.Context(), name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// waitRS waits until cond holds for the ReplicaSet.
func (h *harness) waitRS(name string, what string, cond func(*appsv1.ReplicaSet) bool) *appsv1.ReplicaSet {
	h.t.Helper()
	return testenv.WaitFor(h.t, h.env, client.ReplicaSets, h.ns+"/"+name, func(rs *appsv1.ReplicaSet) bool {
		return rs.Status.ObservedGeneration == rs.Generation && cond(rs)
	})
}

// waitPods lists the namespace's pods until cond holds for them, listing
// again on every change a watch reports, and fails the test after 30s.
func (h *harness) waitPods(what string, cond func([]*corev1.Pod) bool) []*corev1.Pod {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.t.Context(), 30*time.Second)
	defer cancel()
	var last []*corev1.Pod
	for {
		list, err := h.pods.List(ctx, metav1.ListOptions{})
		if err != nil {
			h.t.Fatalf("waiting for %s: %v (last pods: %s)", what, err, describePods(last))
		}
		last = list.Items
		if cond(list.Items) {
			return list.Items
		}
		w, err := h.pods.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			h.t.Fatalf("waiting for %s: %v (last pods: %s)", what, err, describePods(last))
		}
		select {
		case <-w.ResultChan():
		case <-ctx.Done():
		}
		w.Stop()
		if ctx.Err() != nil {
			h.t.Fatalf("timed out waiting for %s; last pods: %s", what, describePods(last))
		}
	}
}

func describePods(pods []*corev1.Pod) string {
	var b strings.Builder
	for _, p := range pods {
		owner := "-"
		if ref := metav1.GetControllerOf(p); ref != nil {
			owner = ref.Name
		}
		fmt.Fprintf(&b, "\n  %s owner=%s node=%q phase=%s ready=%v deleting=%v labels=%v",
			p.Name, owner, p.Spec.NodeName, p.Status.Phase, isPodReady(p), p.DeletionTimestamp != nil, p.Labels)
	}
	return b.String()
}

// controlledBy returns the active pods rs controls.
func controlledBy(pods []*corev1.Pod, rs *appsv1.ReplicaSet) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == rs.UID && isPodActive(p) {
			out = append(out, p)
		}
	}
	return out
}
