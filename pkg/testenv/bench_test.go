package testenv

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/client"
)

// BenchmarkStartStop measures an environment's whole life: Start, one
// request (so the server is known to answer), Stop. Besides the mean
// (ns/op) it reports the median and the 90th percentile of the
// iterations, since the target is a median.
func BenchmarkStartStop(b *testing.B) {
	for _, bc := range []struct {
		name string
		opts []Option
	}{
		{"http", nil},
		{"https", []Option{WithTLS(true)}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			durations := make([]time.Duration, 0, b.N)
			for b.Loop() {
				began := time.Now()
				env := Start(b, bc.opts...)
				if _, err := client.NewResource(env.Client, client.Namespaces).Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
					b.Fatal(err)
				}
				env.Stop()
				durations = append(durations, time.Since(began))
			}
			slices.Sort(durations)
			b.ReportMetric(float64(durations[len(durations)/2].Microseconds())/1000, "ms-median")
			b.ReportMetric(float64(durations[len(durations)*9/10].Microseconds())/1000, "ms-p90")
		})
	}
}
