package deployment

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controller"
	"github.com/kplane/kplane/pkg/controllers/replicaset"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/testenv"
	"github.com/kplane/kplane/pkg/workqueue"
)

// neverReadyLabel on a pod template keeps the test's kubelet stand-in from
// making its pods ready.
const neverReadyLabel = "test.kplane.io/never-ready"

// harness is a testenv environment running the Deployment controller, the
// ReplicaSet controller and a stand-in for the kubelet that marks every
// pod Running and Ready, with clients scoped to one namespace.
type harness struct {
	t    *testing.T
	env  *testenv.Env
	ns   string
	deps *client.ResourceClient[*appsv1.Deployment]
	rss  *client.ResourceClient[*appsv1.ReplicaSet]
	pods *client.ResourceClient[*corev1.Pod]
}

func startHarness(t *testing.T, clk clock.WithTicker) *harness {
	t.Helper()
	env := testenv.Start(t, testenv.WithController(Name, func(ctx context.Context, env *testenv.Env) error {
		logger := slog.New(slog.DiscardHandler)
		f, err := informers.New(informers.Config{Client: env.Client, Logger: logger})
		if err != nil {
			return err
		}
		defer f.Shutdown()
		dc, err := New(Config{Informers: f, Client: env.Client, Clock: clk, Logger: logger})
		if err != nil {
			return err
		}
		rc, err := replicaset.New(replicaset.Config{Client: env.Client, Informers: f, Logger: logger})
		if err != nil {
			return err
		}
		kubelet, err := newReadyMaker(env.Client, f, logger)
		if err != nil {
			return err
		}
		f.Start(ctx)
		var wg sync.WaitGroup
		errs := make(chan error, 3) // one per Run below
		wg.Go(func() { errs <- rc.Run(ctx, 2) })
		wg.Go(func() { errs <- kubelet.Run(ctx, 2) })
		wg.Go(func() { errs <- dc.Run(ctx, 2) })
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
		t: t, env: env, ns: ns,
		deps: client.NewResource(env.Client, client.Deployments).Namespace(ns),
		rss:  client.NewResource(env.Client, client.ReplicaSets).Namespace(ns),
		pods: client.NewResource(env.Client, client.Pods).Namespace(ns),
	}
}

// newReadyMaker is a controller that marks every pod Running and Ready,
// as a kubelet with instant containers would.
func newReadyMaker(c *client.Client, f *informers.Factory, logger *slog.Logger) (*controller.Controller, error) {
	pods, err := f.Pods()
	if err != nil {
		return nil, err
	}
	podClient := client.NewResource(c, client.Pods)
	lister := pods.Lister()
	queue, err := workqueue.NewRateLimiting(workqueue.RateLimitingConfig[string]{Config: workqueue.Config{Name: "ready-maker"}})
	if err != nil {
		return nil, err
	}
	ctrl, err := controller.New(controller.Config{
		Name:  "ready-maker",
		Queue: queue,
		SyncHandler: func(ctx context.Context, key string) error {
			ns, name, err := cache.SplitObjectKey(key)
			if err != nil {
				return controller.Terminal(err)
			}
			pod, err := lister.Namespace(ns).Get(name)
			if err != nil || pod.DeletionTimestamp != nil || pod.Labels[neverReadyLabel] != "" || pod.Status.Phase == corev1.PodRunning {
				return nil
			}
			cp := pod.DeepCopy()
			now := metav1.Now()
			cp.Status.Phase = corev1.PodRunning
			cp.Status.StartTime = &now
			cp.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}
			_, err = podClient.Namespace(ns).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
			return err
		},
		CacheSyncs: map[string]controller.InformerSynced{"pods": pods.HasSynced},
		Logger:     logger,
	})
	if err != nil {
		return nil, err
	}
	if _, err := pods.AddEventHandler(controller.EnqueueHandler[*corev1.Pod](ctrl), cache.HandlerOptions{}); err != nil {
		return nil, err
	}
	return ctrl, nil
}

func (h *harness) key(name string) string { return h.ns + "/" + name }

func (h *harness) create(d *appsv1.Deployment) *appsv1.Deployment {
	h.t.Helper()
	got, err := h.deps.Create(h.t.Context(), d, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return got
}

// update applies change to the stored Deployment, retrying on conflicts.
func (h *harness) update(name string, change func(d *appsv1.Deployment)) *appsv1.Deployment {
	h.t.Helper()
	for {
		d, err := h.deps.Get(h.t.Context(), name, metav1.GetOptions{})
		if err != nil {
			h.t.Fatal(err)
		}
		change(d)
		got, err := h.deps.Update(h.t.Context(), d, metav1.UpdateOptions{})
		if err == nil {
			return got
		}
		if !isConflict(err) {
			h.t.Fatal(err)
		}
	}
}

// waitRolledOut waits until the Deployment is rolled out as kubectl
// rollout status decides it, and Available.
func (h *harness) waitRolledOut(name string) *appsv1.Deployment {
	h.t.Helper()
	return testenv.WaitFor(h.t, h.env, client.Deployments, h.key(name), func(d *appsv1.Deployment) bool {
		return rolledOut(d) && conditionReason(d, appsv1.DeploymentAvailable) == ReasonMinimumReplicasAvailable
	})
}

// rolledOut is kubectl rollout status's test of a finished rollout.
func rolledOut(d *appsv1.Deployment) bool {
	if d.Generation > d.Status.ObservedGeneration {
		return false
	}
	if c := getCondition(d.Status, appsv1.DeploymentProgressing); c == nil || c.Reason != ReasonNewReplicaSetAvailable {
		return false
	}
	n := *d.Spec.Replicas
	return d.Status.UpdatedReplicas == n && d.Status.Replicas == n && d.Status.AvailableReplicas == n
}

func conditionReason(d *appsv1.Deployment, t appsv1.DeploymentConditionType) string {
	if c := getCondition(d.Status, t); c != nil {
		return c.Reason
	}
	return ""
}

// replicaSets lists the namespace's ReplicaSets by name.
func (h *harness) replicaSets() map[string]*appsv1.ReplicaSet {
	h.t.Helper()
	list, err := h.rss.List(h.t.Context(), metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]*appsv1.ReplicaSet{}
	for _, rs := range list.Items {
		out[rs.Name] = rs
	}
	return out
}

func (h *harness) readyPods(selector map[string]string) int {
	h.t.Helper()
	list, err := h.pods.List(h.t.Context(), metav1.ListOptions{LabelSelector: labels.SelectorFromSet(selector).String()})
	if err != nil {
		h.t.Fatal(err)
	}
	n := 0
	for _, p := range list.Items {
		if p.Status.Phase == corev1.PodRunning {
			n++
		}
	}
	return n
}

// watchReplicaSets calls check with every consistent state of the
// namespace's ReplicaSets (one per watch event, in resourceVersion order)
// until the returned stop is called; check reports violations with
// t.Errorf.
func (h *harness) watchReplicaSets(check func(sets map[string]*appsv1.ReplicaSet)) (stop func()) {
	h.t.Helper()
	return watchAll(h.t, h.rss, check)
}

// watchPods is watchReplicaSets for pods.
func (h *harness) watchPods(check func(pods map[string]*corev1.Pod)) (stop func()) {
	h.t.Helper()
	return watchAll(h.t, h.pods, check)
}

func watchAll[T cache.Object](t *testing.T, rc *client.ResourceClient[T], check func(map[string]T)) (stop func()) {
	t.Helper()
	list, err := rc.List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := rc.Watch(t.Context(), metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	objs := map[string]T{}
	for _, o := range list.Items {
		objs[o.GetName()] = o
	}
	check(objs)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			switch ev.Type {
			case watch.Added, watch.Modified:
				objs[ev.Object.GetName()] = ev.Object
			case watch.Deleted:
				delete(objs, ev.Object.GetName())
			case watch.Error:
				t.Errorf("watch error: %v", ev.Status)
				return
			default:
				continue
			}
			check(objs)
		}
	}()
	return func() {
		w.Stop()
		<-done
	}
}

func isConflict(err error) bool {
	type statusErr interface{ Status() metav1.Status }
	se, ok := err.(statusErr)
	return ok && se.Status().Reason == metav1.StatusReasonConflict
}

func testDeployment(name string, replicas int32, image string) *appsv1.Deployment {
	surge, unavailable := intstr.FromInt32(1), intstr.FromInt32(1)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
			},
			Strategy: appsv1.DeploymentStrategy{
				Type:          appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable},
			},
		},
	}
}

func setImage(image string) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = image }
}

// ownedBy keeps the sets controlled by d.
func ownedBy(sets map[string]*appsv1.ReplicaSet, d *appsv1.Deployment) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range sets {
		if ref := metav1.GetControllerOf(rs); ref != nil && ref.UID == d.UID {
			out = append(out, rs)
		}
	}
	return out
}

func describe(sets []*appsv1.ReplicaSet) string {
	s := ""
	for _, rs := range sets {
		s += fmt.Sprintf(" %s(spec %d, available %d)", rs.Name, *rs.Spec.Replicas, rs.Status.AvailableReplicas)
	}
	return s
}
