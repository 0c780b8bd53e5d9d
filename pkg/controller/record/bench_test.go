package record

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

type nopSink struct{}

func (nopSink) Create(_ context.Context, ev *corev1.Event) (*corev1.Event, error) { return ev, nil }
func (nopSink) Patch(context.Context, string, string, types.PatchType, []byte) (*corev1.Event, error) {
	return nil, nil
}

// BenchmarkEvent measures what a caller pays for Event while Run drains
// into a sink that does nothing: building the event and handing it over.
func BenchmarkEvent(b *testing.B) {
	r, err := New(Config{Sink: nopSink{}, Component: "bench", QPS: -1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = r.Run(ctx) })
	pod := testPod()
	b.ReportAllocs()
	for b.Loop() {
		r.Event(pod, corev1.EventTypeNormal, "Synced", "synced ok")
	}
	b.StopTimer()
	cancel()
	wg.Wait()
	b.ReportMetric(float64(r.Stats().Dropped)/float64(b.N), "dropped/op")
}
