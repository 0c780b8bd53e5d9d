package statefulset

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controller/record"
	"github.com/kplane/kplane/pkg/controllers/nodesim"
	"github.com/kplane/kplane/pkg/informers"
	"github.com/kplane/kplane/pkg/testenv"
)

// envHarness is a testenv API server with clients scoped to one namespace,
// on which the controller and a node simulator run (and can be restarted).
type envHarness struct {
	t    testing.TB
	env  *testenv.Env
	ns   string
	sets *client.ResourceClient[*appsv1.StatefulSet]
	pods *client.ResourceClient[*corev1.Pod]
	pvcs *client.ResourceClient[*corev1.PersistentVolumeClaim]
}

func startEnv(t testing.TB, opts ...testenv.Option) *envHarness {
	t.Helper()
	env := testenv.Start(t, opts...)
	ns := env.Namespace(t)
	return &envHarness{
		t: t, env: env, ns: ns,
		sets: client.NewResource(env.Client, client.StatefulSets).Namespace(ns),
		pods: client.NewResource(env.Client, client.Pods).Namespace(ns),
		pvcs: client.NewResource(env.Client, client.PersistentVolumeClaims).Namespace(ns),
	}
}

// runControllers runs the StatefulSet controller and a node simulator of
// nodes nodes on their own informers until the returned stop is called
// (or the test ends); stop waits for them to exit.
func (h *envHarness) runControllers(nodes, workers int) (stop func()) {
	h.t.Helper()
	logger := slog.New(slog.DiscardHandler)
	f, err := informers.New(informers.Config{Client: h.env.Client, Logger: logger})
	if err != nil {
		h.t.Fatal(err)
	}
	rec, err := record.New(record.Config{
		Sink:      record.ClientSink{Events: client.NewResource(h.env.Client, client.Events)},
		Component: Name, Logger: logger,
	})
	if err != nil {
		h.t.Fatal(err)
	}
	c, err := New(Config{Client: h.env.Client, Informers: f, Recorder: rec, Logger: logger})
	if err != nil {
		h.t.Fatal(err)
	}
	sim, err := nodesim.New(nodesim.Config{Nodes: nodes, Client: h.env.Client, Informers: f, Logger: logger})
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.Start(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = rec.Run(ctx) })
	wg.Go(func() { _ = sim.Run(ctx, 4) })
	wg.Go(func() {
		if err := c.Run(ctx, workers); err != nil && ctx.Err() == nil {
			h.t.Errorf("controller: %v", err)
		}
	})
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			f.Shutdown()
		})
	}
	h.t.Cleanup(stop)
	return stop
}

func (h *envHarness) create(set *appsv1.StatefulSet) *appsv1.StatefulSet {
	h.t.Helper()
	set.Namespace = ""
	set.UID = ""
	set.Generation = 0
	created, err := h.sets.Create(context.Background(), set, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return created
}

func (h *envHarness) patch(name, patch string) {
	h.t.Helper()
	if _, err := h.sets.Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// waitSet waits until the set's status is of its generation and cond holds.
func (h *envHarness) waitSet(name string, cond func(*appsv1.StatefulSet) bool) *appsv1.StatefulSet {
	h.t.Helper()
	return testenv.WaitFor(h.t, h.env, client.StatefulSets, h.ns+"/"+name, func(s *appsv1.StatefulSet) bool {
		return s.Status.ObservedGeneration == s.Generation && cond(s)
	})
}

// allReady is the condition `kubectl rollout status` waits for on a
// RollingUpdate set with a partition: every replica ready and updated
// down to the partition.
func allReady(s *appsv1.StatefulSet) bool {
	n := ptr.Deref(s.Spec.Replicas, 1)
	partition := int32(0)
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		partition = *ru.Partition
	}
	return s.Status.Replicas == n && s.Status.ReadyReplicas == n && s.Status.AvailableReplicas == n && s.Status.UpdatedReplicas >= n-partition
}

func (h *envHarness) listPods() []*corev1.Pod {
	h.t.Helper()
	list, err := h.pods.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return list.Items
}

func TestEnvScaleUpInOrdinalOrder(t *testing.T) {
	t.Parallel()
	h := startEnv(t)
	w, err := h.pods.Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	h.runControllers(3, 2)
	h.create(newSet(3))
	// Each pod is created only once its predecessor is running and ready.
	var order []string
	ready := map[string]bool{}
	deadline := time.After(30 * time.Second)
	for len(order) < 3 {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch closed")
			}
			p := ev.Object
			switch ev.Type {
			case watch.Added:
				if ord := ordinalOf(p); ord > 0 && !ready[podName(&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, ord-1)] {
					t.Fatalf("%s created before web-%d was ready", p.Name, ord-1)
				}
				order = append(order, p.Name)
			case watch.Modified:
				ready[p.Name] = isRunningAndReady(p)
			}
		case <-deadline:
			t.Fatalf("timed out; created %v", order)
		}
	}
	if want := []string{"web-0", "web-1", "web-2"}; !slices.Equal(order, want) {
		t.Errorf("creation order %v, want %v", order, want)
	}
	s := h.waitSet("web", allReady)
	if s.Status.CurrentRevision == "" || s.Status.CurrentRevision != s.Status.UpdateRevision {
		t.Errorf("status %+v", s.Status)
	}
}

func TestEnvRollOutWithPartition(t *testing.T) {
	t.Parallel()
	h := startEnv(t)
	h.runControllers(3, 2)
	h.create(newSet(3))
	first := h.waitSet("web", allReady)
	h.patch("web", `{"spec":{"updateStrategy":{"rollingUpdate":{"partition":1}},"template":{"spec":{"containers":[{"name":"c","image":"nginx:2"}]}}}}`)
	s := h.waitSet("web", func(s *appsv1.StatefulSet) bool { return allReady(s) && s.Status.UpdatedReplicas == 2 })
	if s.Status.CurrentRevision != first.Status.CurrentRevision || s.Status.UpdateRevision == s.Status.CurrentRevision {
		t.Errorf("partitioned status %+v", s.Status)
	}
	for _, p := range h.listPods() {
		want := "nginx:2"
		if p.Name == "web-0" {
			want = "nginx:1"
		}
		if imageOf(p) != want || p.Labels[appsv1.StatefulSetRevisionLabel] == "" {
			t.Errorf("%s runs %s (revision %s), want %s", p.Name, imageOf(p), p.Labels[appsv1.StatefulSetRevisionLabel], want)
		}
	}
	h.patch("web", `{"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}}`)
	s = h.waitSet("web", func(s *appsv1.StatefulSet) bool {
		return allReady(s) && s.Status.UpdatedReplicas == 3 && s.Status.CurrentRevision == s.Status.UpdateRevision
	})
	if s.Status.CurrentReplicas != 3 {
		t.Errorf("rolled-out status %+v", s.Status)
	}
}

func TestEnvKeepsClaimsAfterScaleDown(t *testing.T) {
	t.Parallel()
	h := startEnv(t)
	h.runControllers(3, 2)
	const retain = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	h.create(withClaims(newSet(2), retain, retain))
	h.waitSet("web", allReady)
	h.patch("web", `{"spec":{"replicas":1}}`)
	h.waitSet("web", func(s *appsv1.StatefulSet) bool { return allReady(s) && s.Status.Replicas == 1 })
	testenv.WaitFor(h.t, h.env, client.Pods, h.ns+"/web-0", func(*corev1.Pod) bool { return len(h.listPods()) == 1 })
	list, err := h.pvcs.List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range list.Items {
		names = append(names, c.Name)
	}
	slices.Sort(names)
	if want := []string{"data-web-0", "data-web-1"}; !slices.Equal(names, want) {
		t.Errorf("claims %v, want %v", names, want)
	}
}

func TestEnvRestartedControllerMakesNoDuplicatePods(t *testing.T) {
	t.Parallel()
	h := startEnv(t)
	stop := h.runControllers(3, 2)
	set := newSet(5)
	set.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
	h.create(set)
	h.waitSet("web", allReady)
	uids := map[string]types.UID{}
	for _, p := range h.listPods() {
		uids[p.Name] = p.UID
	}
	stop()
	h.runControllers(3, 2)
	h.patch("web", `{"spec":{"replicas":6}}`)
	h.waitSet("web", func(s *appsv1.StatefulSet) bool { return allReady(s) && s.Status.Replicas == 6 })
	pods := h.listPods()
	if len(pods) != 6 {
		t.Fatalf("%d pods after the restart, want 6", len(pods))
	}
	for _, p := range pods {
		if old, ok := uids[p.Name]; ok && old != p.UID {
			t.Errorf("%s was replaced across the restart", p.Name)
		}
	}
	if _, ok := uids["web-5"]; ok {
		t.Error("web-5 existed before the scale-up")
	}
}
