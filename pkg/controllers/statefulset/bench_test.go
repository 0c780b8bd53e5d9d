package statefulset

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kplane/kplane/pkg/testenv"
)

// BenchmarkParallelSetToReady creates a 1,000-replica Parallel
// StatefulSet on testenv with 10 simulated nodes and waits until all its
// pods are ready; it reports when all pods were created (s/created) and
// when all were ready (s/ready), and the test process's peak resident
// set (API server, controller and simulator together) in MB/peak-rss.
func BenchmarkParallelSetToReady(b *testing.B) {
	const replicas = 1000
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		h := startEnv(b, testenv.WithWaitTimeout(5*time.Minute))
		stop := h.runControllers(10, 8)
		set := newSet(replicas)
		set.Name = fmt.Sprintf("web%d", i)
		set.Spec.Selector.MatchLabels["app"] = set.Name
		set.Spec.Template.Labels["app"] = set.Name
		set.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
		b.StartTimer()
		start := time.Now()
		h.create(set)
		h.waitSet(set.Name, func(s *appsv1.StatefulSet) bool { return s.Status.Replicas == replicas })
		b.ReportMetric(time.Since(start).Seconds(), "s/created")
		h.waitSet(set.Name, func(s *appsv1.StatefulSet) bool { return s.Status.ReadyReplicas == replicas })
		b.ReportMetric(time.Since(start).Seconds(), "s/ready")
		b.StopTimer()
		stop()
		h.env.Stop()
		b.StartTimer()
	}
	if rss, ok := testenv.PeakRSS(); ok {
		b.ReportMetric(float64(rss)/(1<<20), "MB/peak-rss")
	}
}

// BenchmarkSyncSteadyState is one sync of a settled 500-pod set: list,
// claim, revisions, count, no writes.
func BenchmarkSyncSteadyState(b *testing.B) {
	set := newSet(500)
	set.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
	f := newFixture(b, set)
	f.settle()
	f.api.takeActions()
	b.ReportAllocs()
	for b.Loop() {
		if err := f.s.sync(b.Context(), "ns/web"); err != nil {
			b.Fatal(err)
		}
	}
	if acts := f.api.takeActions(); len(acts) != 0 {
		b.Fatalf("steady state wrote: %v", acts[:min(len(acts), 5)])
	}
	_ = corev1.PodRunning
}
