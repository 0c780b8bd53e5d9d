package storage

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// Backend owns the data and the single, strictly increasing revision that
// every write in it receives. It hands out one Interface per resource type;
// all of them share that revision, as one etcd cluster does for kube-apiserver.
//
// A Backend is safe for concurrent use. Close releases it; Interfaces handed
// out before Close fail afterwards.
type Backend interface {
	// Storage returns the store for one resource type.
	Storage(cfg ResourceConfig) (Interface, error)
	// CurrentRevision is the revision of the newest write in the backend.
	CurrentRevision(ctx context.Context) (uint64, error)
	// Close stops the backend's goroutines and ends every open watch.
	Close() error
}

// ResourceConfig describes one resource type to a Backend.
type ResourceConfig struct {
	// Codec turns objects into the bytes that are stored and back. Required.
	Codec Codec
	// NewFunc returns a new, empty object of the type, e.g. &corev1.Pod{}. Required.
	NewFunc func() runtime.Object
	// NewListFunc returns a new, empty list of the type, e.g. &corev1.PodList{}. Required.
	NewListFunc func() runtime.Object
}

// Codec encodes objects to their stored form and decodes them back.
type Codec interface {
	Encode(obj runtime.Object) ([]byte, error)
	Decode(data []byte, into runtime.Object) error
}

// Interface is the versioned, watchable store of one resource type.
//
// Keys are paths such as "/pods/default/nginx"; a list or watch of
// "/pods/default" with Recursive set covers every key below "/pods/default/"
// (never "/pods/default2/..."). Every write receives a new revision of the
// Backend, which becomes the object's metadata.resourceVersion.
//
// Errors are *Error values (see errors.go); callers test them with the Is*
// helpers. An Interface is safe for concurrent use.
type Interface interface {
	// Get decodes the object at key into out.
	Get(ctx context.Context, key string, opts GetOptions, out runtime.Object) error
	// GetList decodes the objects at or below key that pass opts.Predicate into
	// listObj, and sets the list's resourceVersion and continue token.
	GetList(ctx context.Context, key string, opts ListOptions, listObj runtime.Object) error
	// Create stores obj at key, failing with ErrCodeKeyExists if something is
	// there, and decodes the stored object (with its resourceVersion) into out.
	Create(ctx context.Context, key string, obj, out runtime.Object) error
	// GuaranteedUpdate reads the object at key, hands a private copy to
	// tryUpdate and writes the result with a compare-and-swap on the revision
	// it read, retrying from a fresh read when another write got in first.
	// When tryUpdate's result encodes to the bytes already stored, nothing is
	// written and the revision is unchanged. With ignoreNotFound, a missing
	// key hands tryUpdate a zero object from NewFunc and the write creates it.
	GuaranteedUpdate(ctx context.Context, key string, dest runtime.Object, ignoreNotFound bool, precond *Preconditions, tryUpdate UpdateFunc) error
	// Delete removes the object at key and decodes its last state into out.
	// validate, when not nil, sees the current object and may veto the delete;
	// it runs again if a concurrent write forces a retry.
	Delete(ctx context.Context, key string, out runtime.Object, precond *Preconditions, validate ValidateFunc) error
	// Watch streams the changes at key (or below it with Recursive) after
	// opts.ResourceVersion, in revision order, each exactly once.
	Watch(ctx context.Context, key string, opts ListOptions) (Watcher, error)
}

// CachedUpdater is a store that can start a GuaranteedUpdate from a state
// of the key a cache holds, instead of reading it first, as kube-apiserver
// hands its watch cache's object to etcd. cached, with its resourceVersion
// the revision it was current at, is not changed. The result is the one
// GuaranteedUpdate gives: a cached state that turns out stale (the write's
// compare-and-swap fails, or the preconditions, tryUpdate or a no-op
// result were decided on it) is replaced by a fresh read and the attempt
// made again.
type CachedUpdater interface {
	GuaranteedUpdateFrom(ctx context.Context, key string, dest runtime.Object, ignoreNotFound bool, precond *Preconditions, tryUpdate UpdateFunc, cached runtime.Object) error
}

// UpdateFunc computes the new state of an object from its current state.
// current is the caller's to mutate. Returning an error aborts the update
// and the error is returned unchanged from GuaranteedUpdate.
type UpdateFunc func(current runtime.Object) (runtime.Object, error)

// ValidateFunc checks the current object before a delete; an error aborts it.
type ValidateFunc func(ctx context.Context, current runtime.Object) error

// Preconditions must hold on the stored object for a write to proceed;
// otherwise the write fails with ErrCodeResourceVersionConflicts
// (or ErrCodeInvalidObj for a UID mismatch, as kube-apiserver answers 409 either way).
type Preconditions struct {
	UID             *types.UID
	ResourceVersion *string
}

// GetOptions tunes Get.
type GetOptions struct {
	// IgnoreNotFound makes a missing key leave out zero-valued instead of failing.
	IgnoreNotFound bool
	// ResourceVersion: "" is the newest state; "0" may be served from any
	// state; otherwise the object must be at least this new.
	ResourceVersion string
}

// ListOptions tunes GetList and Watch.
type ListOptions struct {
	// ResourceVersion and ResourceVersionMatch follow the Kubernetes API:
	// for a list, "" is a consistent read, "0" any recent state, N with
	// Exact that snapshot (410 Gone once compacted), N otherwise at least as
	// new as N. For a watch, the stream starts after N; "" or "0" start at
	// the current state (sending it as Added events first, as kube-apiserver does).
	ResourceVersion      string
	ResourceVersionMatch metav1.ResourceVersionMatch
	// Predicate filters objects and pages lists.
	Predicate Predicate
	// Recursive makes key a prefix.
	Recursive bool
	// ProgressNotify asks a watch for Bookmark events so that clients can
	// resume from a recent revision even when nothing they watch changes.
	ProgressNotify bool
	// SendInitialEvents asks a watch to start with the state at
	// ResourceVersion (or the newest) as Added events, followed by a Bookmark
	// annotated metav1.InitialEventsAnnotationKey: "true".
	SendInitialEvents *bool
	// NoPrevObject tells a watch that selects every object that its
	// consumer keeps the previous states itself (as a watch cache does):
	// Modified events may then come without PrevObject, which saves
	// decoding it. Deleted events always carry it.
	NoPrevObject bool
}

// Predicate selects objects by labels and fields and pages a list.
type Predicate struct {
	Label labels.Selector // nil or Everything selects all
	Field fields.Selector // nil or Everything selects all
	// GetAttrs returns the labels and the selectable fields of an object.
	// Required when Field selects on anything beyond metadata.name and
	// metadata.namespace.
	GetAttrs AttrFunc
	// Limit caps a page of a list; 0 means no limit.
	Limit int64
	// Continue is the token from the previous page.
	Continue string
}

// AttrFunc returns the labels and the selectable fields of an object.
type AttrFunc func(obj runtime.Object) (labels.Set, fields.Set, error)

// Event is one change seen by a Watcher.
type Event struct {
	// Type is watch.Added, watch.Modified, watch.Deleted, watch.Bookmark or watch.Error.
	Type watch.EventType
	// Object is the new state (the last state for Deleted; a *metav1.Status
	// for Error). It is shared by every watcher of the change: read only.
	Object runtime.Object
	// Raw, when not nil, is Object encoded by the resource's Codec, shared
	// like Object, so that the change is serialized once for all watchers.
	Raw []byte
	// PrevObject is the state before a Modified or Deleted change when known. Read only.
	PrevObject runtime.Object
}

// Watcher is an open watch. Stop ends it and closes ResultChan; it is safe to
// call more than once and from any goroutine.
type Watcher interface {
	ResultChan() <-chan Event
	Stop()
}
