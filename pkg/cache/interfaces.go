package cache

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Object is what the cache holds: a Kubernetes object with metadata, such as
// *corev1.Pod.
type Object interface {
	metav1.Object
	runtime.Object
}

// ListerWatcher is how the cache reads the API: pkg/client implements it
// against a real API server and cachetest in memory.
type ListerWatcher[T Object] interface {
	// List returns one page of objects. opts carries resourceVersion,
	// resourceVersionMatch, limit, continue and selectors as on the wire.
	List(ctx context.Context, opts metav1.ListOptions) (*List[T], error)
	// Watch opens a watch. opts carries resourceVersion, allowWatchBookmarks,
	// sendInitialEvents, timeoutSeconds and selectors as on the wire. An
	// error that is an *apierrors.StatusError with reason Expired or Gone (410)
	// means the resourceVersion is too old: relist.
	Watch(ctx context.Context, opts metav1.ListOptions) (Watch[T], error)
}

// List is one page of a list.
type List[T Object] struct {
	metav1.ListMeta
	Items []T
}

// Watch is an open watch. Stop ends it and closes ResultChan; it is safe to
// call more than once and from any goroutine. ResultChan is also closed when
// the server ends the watch.
type Watch[T Object] interface {
	ResultChan() <-chan Event[T]
	Stop()
}

// Event is one change on a watch.
type Event[T Object] struct {
	// Type is watch.Added, watch.Modified, watch.Deleted, watch.Bookmark or watch.Error.
	Type watch.EventType
	// Object is the object; for a Bookmark only its resourceVersion and
	// annotations are set; unset (nil) for Error.
	Object T
	// Status is the server's reason for an Error event (410 Expired when the
	// resourceVersion is too old).
	Status *metav1.Status
}
