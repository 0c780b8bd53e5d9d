package cache

// Handler receives the changes an informer observes. Its methods are called
// from the handler's own goroutine, one at a time, in the order the
// informer observed the changes; they must not mutate the objects.
type Handler[T Object] interface {
	// OnAdd is called for a new object; isInInitialList tells whether it
	// came with the informer's initial list (or is one of the synthetic
	// adds a handler registered late receives for the current content).
	OnAdd(obj T, isInInitialList bool)
	// OnUpdate is called for a changed object, and on resync with
	// oldObj == newObj.
	OnUpdate(oldObj, newObj T)
	// OnDelete is called for a deleted object. obj is either the T as last
	// observed, or a DeletedFinalStateUnknown[T] tombstone when the deletion
	// was only noticed by a relist; Unwrap handles both.
	OnDelete(obj any)
}

// HandlerFuncs adapts functions to a Handler; nil functions ignore their
// events.
type HandlerFuncs[T Object] struct {
	AddFunc    func(obj T, isInInitialList bool)
	UpdateFunc func(oldObj, newObj T)
	DeleteFunc func(obj any)
}

var _ Handler[Object] = HandlerFuncs[Object]{}

// OnAdd calls AddFunc if set.
func (h HandlerFuncs[T]) OnAdd(obj T, isInInitialList bool) {
	if h.AddFunc != nil {
		h.AddFunc(obj, isInInitialList)
	}
}

// OnUpdate calls UpdateFunc if set.
func (h HandlerFuncs[T]) OnUpdate(oldObj, newObj T) {
	if h.UpdateFunc != nil {
		h.UpdateFunc(oldObj, newObj)
	}
}

// OnDelete calls DeleteFunc if set.
func (h HandlerFuncs[T]) OnDelete(obj any) {
	if h.DeleteFunc != nil {
		h.DeleteFunc(obj)
	}
}
