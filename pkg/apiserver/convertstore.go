package apiserver

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kplane/kplane/pkg/apiextensions"
	"github.com/kplane/kplane/pkg/storage"
)

// convertingStore serves one version of a custom resource whose CRD
// converts versions by webhook from the store of its storage version:
// objects are converted on their way in and out, so a webhook that fails
// fails the request, and nothing unconverted is stored or served.
type convertingStore struct {
	inner   storage.Interface
	conv    apiextensions.Converter
	served  schema.GroupVersion
	storage schema.GroupVersion
}

var _ storage.Interface = (*convertingStore)(nil)

// conversionError is the answer to a request a conversion failed.
func conversionError(err error) error {
	return apierrors.NewInternalError(err)
}

func (c *convertingStore) convert(ctx context.Context, to schema.GroupVersion, objs ...runtime.Object) error {
	us := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			return fmt.Errorf("convert %T: not a custom resource", o)
		}
		if u.Object != nil && u.GetAPIVersion() != "" {
			us = append(us, u)
		}
	}
	if err := c.conv.Convert(ctx, us, to); err != nil {
		return conversionError(err)
	}
	return nil
}

// toStorage returns a converted copy of obj in the storage version.
func (c *convertingStore) toStorage(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
	cp := obj.DeepCopyObject()
	if err := c.convert(ctx, c.storage, cp); err != nil {
		return nil, err
	}
	return cp, nil
}

func (c *convertingStore) Get(ctx context.Context, key string, opts storage.GetOptions, out runtime.Object) error {
	if err := c.inner.Get(ctx, key, opts, out); err != nil {
		return err
	}
	return c.convert(ctx, c.served, out)
}

func (c *convertingStore) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	if err := c.inner.GetList(ctx, key, opts, listObj); err != nil {
		return err
	}
	l, ok := listObj.(*unstructured.UnstructuredList)
	if !ok {
		return fmt.Errorf("convert %T: not a list of custom resources", listObj)
	}
	objs := make([]runtime.Object, len(l.Items))
	for i := range l.Items {
		objs[i] = &l.Items[i]
	}
	return c.convert(ctx, c.served, objs...)
}

func (c *convertingStore) Create(ctx context.Context, key string, obj, out runtime.Object) error {
	stored, err := c.toStorage(ctx, obj)
	if err != nil {
		return err
	}
	if err := c.inner.Create(ctx, key, stored, out); err != nil {
		return err
	}
	return c.convert(ctx, c.served, out)
}

func (c *convertingStore) GuaranteedUpdate(ctx context.Context, key string, dest runtime.Object, ignoreNotFound bool, precond *storage.Preconditions, tryUpdate storage.UpdateFunc) error {
	err := c.inner.GuaranteedUpdate(ctx, key, dest, ignoreNotFound, precond, func(current runtime.Object) (runtime.Object, error) {
		if err := c.convert(ctx, c.served, current); err != nil {
			return nil, err
		}
		updated, err := tryUpdate(current)
		if err != nil {
			return nil, err
		}
		return c.toStorage(ctx, updated)
	})
	if err != nil {
		return err
	}
	return c.convert(ctx, c.served, dest)
}

func (c *convertingStore) Delete(ctx context.Context, key string, out runtime.Object, precond *storage.Preconditions, validate storage.ValidateFunc) error {
	var check storage.ValidateFunc
	if validate != nil {
		check = func(ctx context.Context, current runtime.Object) error {
			cp := current.DeepCopyObject()
			if err := c.convert(ctx, c.served, cp); err != nil {
				return err
			}
			return validate(ctx, cp)
		}
	}
	if err := c.inner.Delete(ctx, key, out, precond, check); err != nil {
		return err
	}
	return c.convert(ctx, c.served, out)
}

func (c *convertingStore) Watch(ctx context.Context, key string, opts storage.ListOptions) (storage.Watcher, error) {
	inner, err := c.inner.Watch(ctx, key, opts)
	if err != nil {
		return nil, err
	}
	return newConvertedWatcher(inner, func(ev storage.Event) storage.Event {
		if ev.Type != watch.Added && ev.Type != watch.Modified && ev.Type != watch.Deleted {
			return ev
		}
		obj := ev.Object.DeepCopyObject()
		if err := c.convert(ctx, c.served, obj); err != nil {
			se, _ := err.(*apierrors.StatusError)
			return storage.Event{Type: watch.Error, Object: &se.ErrStatus}
		}
		return storage.Event{Type: ev.Type, Object: obj}
	}), nil
}

// convertedWatcher passes another watch's events through convert, in a
// goroutine of its own; an Error event (from the inner watch, or convert's
// answer to a failed conversion) is the last one.
type convertedWatcher struct {
	inner   storage.Watcher
	convert func(storage.Event) storage.Event
	// out is unbuffered: the reader paces the conversions.
	out  chan storage.Event
	stop chan struct{}
}

// newConvertedWatcher starts converting inner's events; Stop ends it.
func newConvertedWatcher(inner storage.Watcher, convert func(storage.Event) storage.Event) *convertedWatcher {
	w := &convertedWatcher{inner: inner, convert: convert, out: make(chan storage.Event), stop: make(chan struct{})}
	go w.run()
	return w
}

func (w *convertedWatcher) ResultChan() <-chan storage.Event { return w.out }

func (w *convertedWatcher) Stop() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	w.inner.Stop()
}

func (w *convertedWatcher) run() {
	defer close(w.out)
	defer w.inner.Stop()
	for {
		var ev storage.Event
		var ok bool
		select {
		case <-w.stop:
			return
		case ev, ok = <-w.inner.ResultChan():
			if !ok {
				return
			}
		}
		ev = w.convert(ev)
		select {
		case <-w.stop:
			return
		case w.out <- ev:
		}
		if ev.Type == watch.Error {
			return
		}
	}
}
