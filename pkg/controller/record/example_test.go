package record_test

import (
	"context"
	"fmt"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kplane/kplane/pkg/controller/record"
)

// printSink prints what would be written and stops the example after the
// expected number of writes.
type printSink struct {
	writes int
	stop   func()
}

func (s *printSink) Create(_ context.Context, ev *corev1.Event) (*corev1.Event, error) {
	fmt.Printf("create %s %s %s/%s: %s (count %d)\n", ev.Type, ev.Reason, ev.InvolvedObject.Kind, ev.InvolvedObject.Name, ev.Message, ev.Count)
	s.done()
	return ev, nil
}

func (s *printSink) Patch(_ context.Context, _, _ string, _ types.PatchType, data []byte) (*corev1.Event, error) {
	fmt.Printf("patch %s\n", data[:10])
	s.done()
	return nil, nil
}

func (s *printSink) done() {
	if s.writes--; s.writes == 0 {
		s.stop()
	}
}

// Event never blocks; Run writes. A repeat of the same event becomes a
// patch of its count.
func ExampleRecorder() {
	ctx, cancel := context.WithCancel(context.Background())
	r, err := record.New(record.Config{
		Sink:      &printSink{writes: 2, stop: cancel},
		Component: "example-controller",
		Logger:    slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1"}}
	r.Event(pod, corev1.EventTypeWarning, "BackOff", "restarting failed container")
	r.Event(pod, corev1.EventTypeWarning, "BackOff", "restarting failed container")
	_ = r.Run(ctx)
	// Output:
	// create Warning BackOff Pod/web-1: restarting failed container (count 1)
	// patch {"count":2
}
