package job

import (
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/kplane/kplane/pkg/controllers/nodesim"
	"github.com/kplane/kplane/pkg/testenv"
)

// BenchmarkJob1000Completions runs a Job of 1,000 completions with
// parallelism 100 to Complete on testenv, with the node simulator
// finishing each pod as soon as it runs. It reports the time to Complete
// (s/job) and the test process's peak resident set (API server,
// controller and simulator together) in MB/peak-rss.
func BenchmarkJob1000Completions(b *testing.B) {
	h := startHarness(b)
	i := 0
	for b.Loop() {
		name := fmt.Sprintf("bench-%d", i)
		i++
		start := time.Now()
		h.create(newJob(name, 1000, 100, map[string]string{nodesim.CompleteAfterAnnotation: "0s"}))
		done := h.waitJob(name, func(j *batchv1.Job) bool { return hasCondition(j, batchv1.JobComplete, "") })
		if done.Status.Succeeded != 1000 {
			b.Fatalf("succeeded = %d", done.Status.Succeeded)
		}
		b.ReportMetric(time.Since(start).Seconds(), "s/job")
	}
	if rss, ok := testenv.PeakRSS(); ok {
		b.ReportMetric(float64(rss)/(1<<20), "MB/peak-rss")
	}
}
