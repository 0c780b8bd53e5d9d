package controller

import (
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/workqueue"
)

// EnqueueKey adds key to the queue.
func (c *Controller) EnqueueKey(key string) {
	c.queue.Add(key)
}

// EnqueueKeyAfter adds key to the queue once d has passed. A sync handler
// that must look at its key again later (a deadline, a condition that is
// not yet true) calls it and returns nil.
func (c *Controller) EnqueueKeyAfter(key string, d time.Duration) {
	c.queue.AddAfter(key, d)
}

// Enqueue adds obj's key (cache.ObjectKey: "namespace/name", or "name"
// for a cluster-scoped object) to the queue. An object without a name is logged
// and skipped.
func (c *Controller) Enqueue(obj metav1.Object) {
	key, ok := c.keyOf(obj)
	if ok {
		c.queue.Add(key)
	}
}

// EnqueueAfter adds obj's key to the queue once d has passed, for work that
// must be looked at again later (a deadline, a pending condition).
func (c *Controller) EnqueueAfter(obj metav1.Object, d time.Duration) {
	key, ok := c.keyOf(obj)
	if ok {
		c.queue.AddAfter(key, d)
	}
}

// EnqueueControllerOf adds the key of obj's controller (the ownerReference
// with controller=true) if that controller is of ownerKind's group and kind;
// the version is not compared, since a reference may name any served
// version. The controller is taken to live in obj's namespace, as owners of
// namespaced objects must. Nothing is added for an object without such a
// controller.
func (c *Controller) EnqueueControllerOf(obj metav1.Object, ownerKind schema.GroupVersionKind) {
	if isNil(obj) {
		return
	}
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.Kind != ownerKind.Kind || ref.Name == "" {
		return
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || gv.Group != ownerKind.Group {
		return
	}
	if ns := obj.GetNamespace(); ns != "" {
		c.queue.Add(ns + "/" + ref.Name)
		return
	}
	c.queue.Add(ref.Name)
}

func (c *Controller) keyOf(obj metav1.Object) (string, bool) {
	if isNil(obj) {
		c.logger.Error("can not enqueue a nil object")
		return "", false
	}
	key, err := cache.ObjectKey(obj)
	if err != nil {
		c.logger.Error("can not enqueue object", "err", err, "namespace", obj.GetNamespace())
		return "", false
	}
	return key, true
}

// EnqueueDeleted adds the key of an object a delete handler received: the T
// itself or a cache.DeletedFinalStateUnknown[T] tombstone, whose key is used
// even when it holds no object. Anything else is logged and skipped.
func EnqueueDeleted[T cache.Object](c *Controller, obj any) {
	o, err := cache.Unwrap[T](obj)
	if err == nil {
		c.Enqueue(o)
		return
	}
	switch t := obj.(type) {
	case cache.DeletedFinalStateUnknown[T]:
		if t.Key != "" {
			c.queue.Add(t.Key)
			return
		}
	case *cache.DeletedFinalStateUnknown[T]:
		if t != nil && t.Key != "" {
			c.queue.Add(t.Key)
			return
		}
	}
	c.logger.Error("can not enqueue deleted object", "err", err)
}

// EnqueueControllerOfDeleted is EnqueueControllerOf for what a delete
// handler received: the T itself or a tombstone of it.
func EnqueueControllerOfDeleted[T cache.Object](c *Controller, obj any, ownerKind schema.GroupVersionKind) {
	o, err := cache.Unwrap[T](obj)
	if err != nil {
		c.logger.Error("can not enqueue the controller of a deleted object", "err", err)
		return
	}
	c.EnqueueControllerOf(o, ownerKind)
}

// LowPriority is the priority EnqueueHandler gives to the adds of an
// informer's initial list and to resyncs when the queue is a priority queue,
// so that a restart or a resync does not delay the keys of real changes.
const LowPriority = -100

// priorityQueue is what a queue offers to take priorities, as
// *workqueue.PriorityQueue does.
type priorityQueue interface {
	AddWithOpts(opts workqueue.AddOpts, items ...string)
}

// enqueueLow adds obj's key with LowPriority if the queue takes priorities.
func (c *Controller) enqueueLow(obj metav1.Object) {
	pq, ok := c.queue.(priorityQueue)
	if !ok {
		c.Enqueue(obj)
		return
	}
	if key, ok := c.keyOf(obj); ok {
		pq.AddWithOpts(workqueue.AddOpts{Priority: LowPriority}, key)
	}
}

// EnqueueHandler returns informer event handlers that add the object's own
// key on every add, update and delete (tombstones included). On a priority
// queue, the adds of the initial list and resyncs (an update whose
// resourceVersion did not change) get LowPriority.
func EnqueueHandler[T cache.Object](c *Controller) cache.HandlerFuncs[T] {
	return cache.HandlerFuncs[T]{
		AddFunc: func(obj T, initial bool) {
			if initial {
				c.enqueueLow(obj)
				return
			}
			c.Enqueue(obj)
		},
		UpdateFunc: func(oldObj, obj T) {
			if oldObj.GetResourceVersion() == obj.GetResourceVersion() {
				c.enqueueLow(obj)
				return
			}
			c.Enqueue(obj)
		},
		DeleteFunc: func(obj any) { EnqueueDeleted[T](c, obj) },
	}
}

// EnqueueOwnerHandler returns informer event handlers for objects a
// controller of ownerKind owns: they add the key of the object's controller
// on add and delete, and on update the key of the new controller and, when
// the controller reference changed, of the old one too, so an owner that
// lost an object hears of it.
func EnqueueOwnerHandler[T cache.Object](c *Controller, ownerKind schema.GroupVersionKind) cache.HandlerFuncs[T] {
	return cache.HandlerFuncs[T]{
		AddFunc: func(obj T, _ bool) { c.EnqueueControllerOf(obj, ownerKind) },
		UpdateFunc: func(oldObj, newObj T) {
			oldRef, newRef := metav1.GetControllerOf(oldObj), metav1.GetControllerOf(newObj)
			if oldRef != nil && (newRef == nil || oldRef.UID != newRef.UID) {
				c.EnqueueControllerOf(oldObj, ownerKind)
			}
			c.EnqueueControllerOf(newObj, ownerKind)
		},
		DeleteFunc: func(obj any) { EnqueueControllerOfDeleted[T](c, obj, ownerKind) },
	}
}

// isNil reports whether obj is nil or a nil pointer in an interface.
func isNil(obj any) bool {
	if obj == nil {
		return true
	}
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}
