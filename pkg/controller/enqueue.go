package controller

import (
	"errors"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// KeyOf returns the queue key of obj: "namespace/name", or "name" for a
// cluster-scoped object. It fails when obj has no name.
func KeyOf(obj metav1.Object) (string, error) {
	name := obj.GetName()
	if name == "" {
		return "", errors.New("object has no name")
	}
	if ns := obj.GetNamespace(); ns != "" {
		return ns + "/" + name, nil
	}
	return name, nil
}

// EnqueueKey adds key to the queue.
func (c *Controller) EnqueueKey(key string) {
	c.queue.Add(key)
}

// Enqueue adds obj's key to the queue. An object without a name is logged
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
	key, err := KeyOf(obj)
	if err != nil {
		c.logger.Error("can not enqueue object", "err", err, "namespace", obj.GetNamespace())
		return "", false
	}
	return key, true
}
