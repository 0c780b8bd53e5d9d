package controllermanager

import (
	"context"
	"log/slog"
	"regexp"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/controller"
	"github.com/kplane/kplane/pkg/controllers/garbagecollector"
	"github.com/kplane/kplane/pkg/featuregate"
	"github.com/kplane/kplane/pkg/testenv"
	"github.com/kplane/kplane/pkg/workqueue"
)

// gatesWith returns the manager's gates with ControllerPriorityQueue set.
func gatesWith(t *testing.T, priority bool) featuregate.Gates {
	t.Helper()
	reg, err := featuregate.New(featuregate.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.AddVersioned(Features()); err != nil {
		t.Fatal(err)
	}
	if !reg.Enabled(ControllerPriorityQueue) {
		t.Fatal("ControllerPriorityQueue is not on by default")
	}
	if err := reg.SetFromMap(map[string]bool{string(ControllerPriorityQueue): priority}); err != nil {
		t.Fatal(err)
	}
	return reg.Freeze()
}

func podNamed(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", ResourceVersion: "1"}}
}

// With ControllerPriorityQueue on, the queues the manager hands to the
// controllers serve a real change before the initial-list adds queued ahead
// of it; off, they are FIFO.
func TestControllerPriorityQueueGate(t *testing.T) {
	tests := []struct {
		priority bool
		want     []string
	}{
		{priority: true, want: []string{"default/changed", "default/listed-1", "default/listed-2"}},
		{priority: false, want: []string{"default/listed-1", "default/listed-2", "default/changed"}},
	}
	for _, tt := range tests {
		t.Run(map[bool]string{true: "on", false: "off"}[tt.priority], func(t *testing.T) {
			newQueue := queueFactory(Config{Gates: gatesWith(t, tt.priority), Clock: clock.RealClock{}}, nil)
			q, err := newQueue("test")
			if err != nil {
				t.Fatal(err)
			}
			defer q.ShutDown()
			_, isPriority := q.(*workqueue.PriorityQueue[string])
			_, isFIFO := q.(*workqueue.RateLimitingQueue[string])
			if isPriority != tt.priority || isFIFO == tt.priority {
				t.Fatalf("queue %T with ControllerPriorityQueue=%v", q, tt.priority)
			}
			ctrl, err := controller.New(controller.Config{
				Name: "test", Queue: q,
				SyncHandler: func(context.Context, string) error { return nil },
				Logger:      slog.New(slog.DiscardHandler),
			})
			if err != nil {
				t.Fatal(err)
			}
			h := controller.EnqueueHandler[*corev1.Pod](ctrl)
			h.AddFunc(podNamed("listed-1"), true)
			h.AddFunc(podNamed("listed-2"), true)
			h.AddFunc(podNamed("changed"), false)
			var got []string
			for range tt.want {
				key, shutdown := q.Get()
				if shutdown {
					t.Fatal("queue shut down")
				}
				q.Done(key)
				got = append(got, key)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("order of keys (-want +got):\n%s", diff)
			}
		})
	}
}

// /metrics serves the work queue series of every running controller, named
// after it, whichever queue kind the gate picks; the replicaset queue's
// adds prove the controller works from the manager's queue.
func TestWorkQueueMetrics(t *testing.T) {
	for _, priority := range []bool{true, false} {
		t.Run(map[bool]string{true: "priority", false: "fifo"}[priority], func(t *testing.T) {
			c, _ := startServer(t)
			m, err := New(Config{
				Client: c, Gates: gatesWith(t, priority),
				Controllers:     []string{DeploymentController, ReplicaSetController, GarbageCollectorController, NodeSimulator},
				Nodes:           1,
				LeaderElection:  LeaderElectionConfig{Disabled: true},
				Logger:          slog.New(slog.DiscardHandler),
				MetricsRegistry: prometheus.NewRegistry(),
			})
			if err != nil {
				t.Fatal(err)
			}
			runManager(t, m)
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			rs := &appsv1.ReplicaSet{
				ObjectMeta: metav1.ObjectMeta{Name: "queued", Namespace: "default"},
				Spec: appsv1.ReplicaSetSpec{
					Replicas: ptr(int32(1)),
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "queued"}},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "queued"}},
						Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
					},
				},
			}
			if _, err := client.NewResource(c, client.ReplicaSets).Namespace("default").Create(ctx, rs, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := testenv.Wait(ctx, c, client.ReplicaSets, "default/queued", func(rs *appsv1.ReplicaSet) bool { return rs.Status.Replicas == 1 }); err != nil {
				t.Fatal(err)
			}
			code, body := httpGet(t, m.Handler(), "/metrics")
			if code != 200 {
				t.Fatalf("/metrics %d", code)
			}
			for _, name := range []string{
				DeploymentController, ReplicaSetController, NodeSimulator,
				garbagecollector.QueueGraphChanges, garbagecollector.QueueAttemptToDelete, garbagecollector.QueueAttemptToOrphan,
			} {
				for _, metric := range []string{"workqueue_depth", "workqueue_adds_total", "workqueue_retries_total", "workqueue_queue_duration_seconds_count", "workqueue_work_duration_seconds_count"} {
					if !regexp.MustCompile(`(?m)^` + metric + `\{name="` + name + `"\} `).MatchString(body) {
						t.Errorf("/metrics lacks %s{name=%q}", metric, name)
					}
				}
			}
			adds := regexp.MustCompile(`(?m)^workqueue_adds_total\{name="replicaset"\} (\S+)$`).FindStringSubmatch(body)
			if adds == nil {
				t.Fatal("/metrics lacks workqueue_adds_total for replicaset")
			}
			if n, err := strconv.ParseFloat(adds[1], 64); err != nil || n < 1 {
				t.Errorf("workqueue_adds_total{name=\"replicaset\"} = %s, want at least 1", adds[1])
			}
		})
	}
}
