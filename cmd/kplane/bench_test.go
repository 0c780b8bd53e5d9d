package main

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/kplane/kplane/pkg/cache"
)

func TestBenchCountersDelta(t *testing.T) {
	scrape := func(pods, bindings, puts, fsyncs int) benchCounters {
		t.Helper()
		text := `# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} ` + strconv.Itoa(pods) + `
apiserver_request_total{code="409",component="apiserver",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 1
apiserver_request_total{code="201",component="apiserver",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} ` + strconv.Itoa(bindings) + `
# TYPE etcd_mvcc_put_total counter
etcd_mvcc_put_total ` + strconv.Itoa(puts) + `
# TYPE etcd_disk_wal_fsync_duration_seconds histogram
etcd_disk_wal_fsync_duration_seconds_bucket{le="0.001"} 1
etcd_disk_wal_fsync_duration_seconds_bucket{le="+Inf"} ` + strconv.Itoa(fsyncs) + `
etcd_disk_wal_fsync_duration_seconds_sum 0.5
etcd_disk_wal_fsync_duration_seconds_count ` + strconv.Itoa(fsyncs) + `
`
		c, err := parseBenchCounters([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	before, after := scrape(10, 5, 100, 7), scrape(60, 55, 300, 40)
	want := benchRequests{
		Total:          100,
		ByVerb:         map[string]int64{"POST": 100},
		ByVerbResource: map[string]int64{"POST pods": 50, "POST pods/binding": 50},
		ByCode:         map[string]int64{"201": 100},
	}
	if diff := cmp.Diff(want, deltaRequests(before, after)); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&benchEtcd{Puts: 200, WALFsyncs: 33}, deltaEtcd(before, after)); diff != "" {
		t.Errorf("etcd (-want +got):\n%s", diff)
	}
	if got := deltaEtcd(benchCounters{}, benchCounters{}); got != nil {
		t.Errorf("etcd figures without etcd metrics: %+v", got)
	}
}

// The tracker reaches a phase's milestones only from what the watches
// showed, and each at the first event that made it true.
func TestBenchTrackerMilestones(t *testing.T) {
	tr := newBenchTracker(2)
	p := tr.begin("create", "img:1", benchCreateMilestones)
	send := func(pod *corev1.Pod) {
		t.Helper()
		if err := benchApply(tr, true, cache.Event[*corev1.Pod]{Type: watch.Modified, Object: pod}, "pods", tr.pods); err != nil {
			t.Fatal(err)
		}
	}
	pod := func(name, node string, ready bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: node}}
		if ready {
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}
		return p
	}
	reached := func() []string {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		var names []string
		for _, m := range benchCreateMilestones {
			if _, ok := p.reached[m.name]; ok {
				names = append(names, m.name)
			}
		}
		return names
	}
	send(pod("a", "", false))
	send(pod("b", "n1", false))
	send(pod("a", "n0", true))
	if diff := cmp.Diff([]string{"first_pod_created", "pods_created", "pods_scheduled"}, reached()); diff != "" {
		t.Errorf("after two pods scheduled (-want +got):\n%s", diff)
	}
	send(pod("b", "n1", true))
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Generation: 2}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)}}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}
	if err := benchApply(tr, true, cache.Event[*appsv1.Deployment]{Type: watch.Added, Object: d}, "deployments", tr.deployments); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
		t.Fatal("available at an old observedGeneration")
	default:
	}
	d = d.DeepCopy()
	d.Status.ObservedGeneration = 2
	if err := benchApply(tr, true, cache.Event[*appsv1.Deployment]{Type: watch.Modified, Object: d}, "deployments", tr.deployments); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	default:
		t.Fatalf("not done with every milestone true: %v", reached())
	}
	if err := benchApply(tr, false, cache.Event[*corev1.Pod]{}, "pods", tr.pods); err == nil {
		t.Error("a closed watch is no error")
	}
}
