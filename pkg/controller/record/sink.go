package record

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kplane/kplane/pkg/client"
)

// Sink writes Events to the API. Errors are *apierrors.StatusError values as
// the API server returns them.
type Sink interface {
	// Create stores a new Event in its namespace.
	Create(ctx context.Context, event *corev1.Event) (*corev1.Event, error)
	// Patch changes the Event namespace/name.
	Patch(ctx context.Context, namespace, name string, pt types.PatchType, data []byte) (*corev1.Event, error)
}

// ClientSink is the Sink of a typed client for Events, such as
// client.NewResource(c, client.Events).
type ClientSink struct {
	Events *client.ResourceClient[*corev1.Event]
}

var _ Sink = ClientSink{}

// Create implements Sink.
func (s ClientSink) Create(ctx context.Context, event *corev1.Event) (*corev1.Event, error) {
	return s.Events.Namespace(event.Namespace).Create(ctx, event, metav1.CreateOptions{})
}

// Patch implements Sink.
func (s ClientSink) Patch(ctx context.Context, namespace, name string, pt types.PatchType, data []byte) (*corev1.Event, error) {
	return s.Events.Namespace(namespace).Patch(ctx, name, pt, data, metav1.PatchOptions{})
}
