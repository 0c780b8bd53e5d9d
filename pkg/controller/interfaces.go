package controller

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Queue is the rate-limited work queue a Controller drains. The queues of
// pkg/workqueue satisfy it; any queue with the same guarantees will do: an
// item is handed to at most one Get caller until Done, an item added while
// being processed is handed out again after Done, and after ShutDown Get
// drains what is left and then returns shutdown=true.
type Queue[T comparable] interface {
	// Add marks item as needing processing.
	Add(item T)
	// AddAfter adds item once d has passed.
	AddAfter(item T, d time.Duration)
	// AddRateLimited adds item after the rate limiter says it may be.
	AddRateLimited(item T)
	// Forget resets the rate limiter's memory of item.
	Forget(item T)
	// NumRequeues is how many times item has been rate-limited since the
	// last Forget.
	NumRequeues(item T) int
	// Get blocks until an item is ready or the queue is shut down.
	Get() (item T, shutdown bool)
	// Done marks item as processed.
	Done(item T)
	// ShutDown makes Get return shutdown=true once the queue is empty;
	// safe to call more than once.
	ShutDown()
}

// Patcher patches one object of the type a RefManager claims. pt is the
// patch type (the RefManager sends strategic merge patches). Errors are
// *apierrors.StatusError values as the API server returns them.
type Patcher interface {
	Patch(ctx context.Context, namespace, name string, pt types.PatchType, data []byte) error
}

// PatcherFunc adapts a function to Patcher.
type PatcherFunc func(ctx context.Context, namespace, name string, pt types.PatchType, data []byte) error

// Patch calls f.
func (f PatcherFunc) Patch(ctx context.Context, namespace, name string, pt types.PatchType, data []byte) error {
	return f(ctx, namespace, name, pt, data)
}

// InformerSynced reports whether an informer's cache has been filled by its
// first list; the HasSynced of pkg/cache informers.
type InformerSynced func() bool

// Metrics receives a Controller's measurements. Implementations must be safe
// for concurrent use and cheap: they run on the workers' path.
type Metrics interface {
	// ObserveReconcile records one call of the sync handler: its result
	// (ResultSuccess or ResultError; a panic is an error) and how long it took.
	ObserveReconcile(controller, result string, d time.Duration)
	// IncTerminalErrors counts an error marked Terminal, not retried.
	IncTerminalErrors(controller string)
	// IncPanics counts a recovered panic in the sync handler.
	IncPanics(controller string)
	// IncDropped counts a key given up on after MaxRetries requeues.
	IncDropped(controller string)
	// AddActiveWorkers moves the number of workers running the handler now.
	AddActiveWorkers(controller string, delta int)
	// SetMaxWorkers records how many workers Run started.
	SetMaxWorkers(controller string, n int)
}
