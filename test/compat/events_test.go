package compat

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// TestEventRecorder records events with client-go's event broadcaster, as
// every controller does: the first event is created, repeats of it are
// aggregated by patching its count.
func TestEventRecorder(t *testing.T) {
	ctx := context.Background()
	srv := startServer(t)
	cs := srv.clientset(t)
	p, err := cs.CoreV1().Pods("default").Create(ctx, pod("evented", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	defer broadcaster.Shutdown()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "compat"})

	recorder.Event(p, corev1.EventTypeNormal, "Tested", "first")
	ev := waitForEvent(t, cs.CoreV1().Events("default"), func(e corev1.Event) bool { return e.Reason == "Tested" })
	if ev.InvolvedObject.UID != p.UID || ev.Source.Component != "compat" || ev.Count != 1 {
		t.Errorf("event = %+v", ev)
	}
	recorder.Event(p, corev1.EventTypeNormal, "Tested", "first")
	ev = waitForEvent(t, cs.CoreV1().Events("default"), func(e corev1.Event) bool { return e.Reason == "Tested" && e.Count == 2 })
	if ev.Message != "first" {
		t.Errorf("aggregated event = %+v", ev)
	}
}

// waitForEvent watches the events (current ones first) until one matches:
// the broadcaster writes asynchronously and offers no completion signal.
func waitForEvent(t *testing.T, events typedcorev1.EventInterface, match func(corev1.Event) bool) corev1.Event {
	t.Helper()
	w, err := events.Watch(context.Background(), metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("event watch closed")
			}
			if ev, isEvent := e.Object.(*corev1.Event); isEvent && match(*ev) {
				return *ev
			}
		case <-deadline:
			t.Fatal("no matching event")
		}
	}
}
