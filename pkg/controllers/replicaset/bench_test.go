package replicaset

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// BenchmarkSyncSteadyState is one sync of a ReplicaSet of 500 ready pods
// whose status is already right: list, claim, count, no writes.
func BenchmarkSyncSteadyState(b *testing.B) {
	const n = 500
	rs := newRS(n)
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = podOf(rs, fmt.Sprintf("p%03d", i), t0.Add(-time.Hour))
	}
	f := newFixture(b, rs, pods...)
	if err := f.s.sync(b.Context(), "ns/web"); err != nil {
		b.Fatal(err)
	}
	settled := rs.DeepCopy()
	settled.Status = f.api.statuses[0]
	if err := f.rsIdx.Update(settled); err != nil {
		b.Fatal(err)
	}
	writes := len(f.api.actions)
	b.ReportAllocs()
	for b.Loop() {
		if err := f.s.sync(b.Context(), "ns/web"); err != nil {
			b.Fatal(err)
		}
	}
	if len(f.api.actions) != writes {
		b.Fatalf("steady state wrote: %v", f.api.actions[writes:])
	}
}

// BenchmarkPodsToDelete ranks 500 pods spread over 10 nodes and picks 250.
func BenchmarkPodsToDelete(b *testing.B) {
	rs := newRS(250)
	pods := make([]*corev1.Pod, 500)
	for i := range pods {
		pods[i] = podOf(rs, fmt.Sprintf("p%03d", i), t0.Add(-time.Duration(i)*time.Second))
		pods[i].Spec.NodeName = fmt.Sprintf("n%d", i%10)
	}
	b.ReportAllocs()
	for b.Loop() {
		if got := podsToDelete(pods, pods, 250); len(got) != 250 {
			b.Fatal(len(got))
		}
	}
}
