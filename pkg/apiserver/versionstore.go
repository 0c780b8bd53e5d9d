package apiserver

import (
	"context"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kplane/kplane/pkg/registry"
	"github.com/kplane/kplane/pkg/storage"
)

// versionedStore serves a built-in resource in a version other than its
// storage version (a registry.VersionConverter) from the store of the
// storage version: objects are converted on their way in and out, the
// watch events with them, so that both versions share one set of objects,
// one revision and one stream of changes.
type versionedStore struct {
	inner storage.Interface
	conv  registry.VersionConverter
	// newStored and newStoredList are the storage version's New and NewList.
	newStored     func() runtime.Object
	newStoredList func() runtime.Object
	storedType    reflect.Type
}

var _ storage.Interface = (*versionedStore)(nil)

func newVersionedStore(inner storage.Interface, conv registry.VersionConverter, stored registry.Strategy) *versionedStore {
	return &versionedStore{
		inner: inner, conv: conv,
		newStored: stored.New, newStoredList: stored.NewList,
		storedType: reflect.TypeOf(stored.New()),
	}
}

// fromStorage converts stored into out, an object of the served type.
func (v *versionedStore) fromStorage(stored, out runtime.Object) error {
	served, err := v.conv.FromStorage(stored)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("convert from storage: %w", err))
	}
	return setInto(out, served)
}

// setInto copies the object src points to into the one dst points to.
func setInto(dst, src runtime.Object) error {
	dv, sv := reflect.ValueOf(dst), reflect.ValueOf(src)
	if dv.Kind() != reflect.Pointer || sv.Type() != dv.Type() {
		return apierrors.NewInternalError(fmt.Errorf("convert: %T is not a %T", src, dst))
	}
	dv.Elem().Set(sv.Elem())
	return nil
}

func (v *versionedStore) toStorage(obj runtime.Object) (runtime.Object, error) {
	out, err := v.conv.ToStorage(obj)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("convert to storage: %w", err))
	}
	return out, nil
}

// predicate makes p's attributes those of the served version.
func (v *versionedStore) predicate(p storage.Predicate) storage.Predicate {
	if p.GetAttrs == nil {
		return p
	}
	attrs := p.GetAttrs
	p.GetAttrs = func(obj runtime.Object) (labels.Set, fields.Set, error) {
		served, err := v.conv.FromStorage(obj)
		if err != nil {
			return nil, nil, err
		}
		return attrs(served)
	}
	return p
}

func (v *versionedStore) Get(ctx context.Context, key string, opts storage.GetOptions, out runtime.Object) error {
	stored := v.newStored()
	if err := v.inner.Get(ctx, key, opts, stored); err != nil {
		return err
	}
	if m, err := meta.Accessor(stored); err == nil && opts.IgnoreNotFound && m.GetResourceVersion() == "" {
		return nil // missing: out stays zero
	}
	return v.fromStorage(stored, out)
}

func (v *versionedStore) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	opts.Predicate = v.predicate(opts.Predicate)
	stored := v.newStoredList()
	if err := v.inner.GetList(ctx, key, opts, stored); err != nil {
		return err
	}
	items, err := meta.ExtractList(stored)
	if err != nil {
		return err
	}
	served := make([]runtime.Object, len(items))
	for i, it := range items {
		if served[i], err = v.conv.FromStorage(it); err != nil {
			return apierrors.NewInternalError(fmt.Errorf("convert from storage: %w", err))
		}
	}
	if err := meta.SetList(listObj, served); err != nil {
		return err
	}
	src, err := meta.ListAccessor(stored)
	if err != nil {
		return err
	}
	dst, err := meta.ListAccessor(listObj)
	if err != nil {
		return err
	}
	dst.SetResourceVersion(src.GetResourceVersion())
	dst.SetContinue(src.GetContinue())
	dst.SetRemainingItemCount(src.GetRemainingItemCount())
	return nil
}

func (v *versionedStore) Create(ctx context.Context, key string, obj, out runtime.Object) error {
	stored, err := v.toStorage(obj)
	if err != nil {
		return err
	}
	created := v.newStored()
	if err := v.inner.Create(ctx, key, stored, created); err != nil {
		return err
	}
	return v.fromStorage(created, out)
}

func (v *versionedStore) GuaranteedUpdate(ctx context.Context, key string, dest runtime.Object, ignoreNotFound bool, precond *storage.Preconditions, tryUpdate storage.UpdateFunc) error {
	stored := v.newStored()
	err := v.inner.GuaranteedUpdate(ctx, key, stored, ignoreNotFound, precond, func(current runtime.Object) (runtime.Object, error) {
		served, err := v.conv.FromStorage(current)
		if err != nil {
			return nil, apierrors.NewInternalError(fmt.Errorf("convert from storage: %w", err))
		}
		updated, err := tryUpdate(served)
		if err != nil {
			return nil, err
		}
		return v.toStorage(updated)
	})
	if err != nil {
		return err
	}
	return v.fromStorage(stored, dest)
}

func (v *versionedStore) Delete(ctx context.Context, key string, out runtime.Object, precond *storage.Preconditions, validate storage.ValidateFunc) error {
	var check storage.ValidateFunc
	if validate != nil {
		check = func(ctx context.Context, current runtime.Object) error {
			served, err := v.conv.FromStorage(current)
			if err != nil {
				return apierrors.NewInternalError(fmt.Errorf("convert from storage: %w", err))
			}
			return validate(ctx, served)
		}
	}
	stored := v.newStored()
	if err := v.inner.Delete(ctx, key, stored, precond, check); err != nil {
		return err
	}
	return v.fromStorage(stored, out)
}

func (v *versionedStore) Watch(ctx context.Context, key string, opts storage.ListOptions) (storage.Watcher, error) {
	opts.Predicate = v.predicate(opts.Predicate)
	inner, err := v.inner.Watch(ctx, key, opts)
	if err != nil {
		return nil, err
	}
	return newConvertedWatcher(inner, func(ev storage.Event) storage.Event {
		if ev.Type == watch.Error {
			return ev
		}
		return v.convertEvent(ev)
	}), nil
}

// convertEvent returns ev with its objects in the served version.
func (v *versionedStore) convertEvent(ev storage.Event) storage.Event {
	conv := func(o runtime.Object) (runtime.Object, error) {
		if o == nil || reflect.TypeOf(o) != v.storedType {
			return o, nil
		}
		return v.conv.FromStorage(o)
	}
	obj, err := conv(ev.Object)
	var prev runtime.Object
	if err == nil {
		prev, err = conv(ev.PrevObject)
	}
	if err != nil {
		st := apierrors.NewInternalError(fmt.Errorf("convert from storage: %w", err)).ErrStatus
		return storage.Event{Type: watch.Error, Object: &st}
	}
	return storage.Event{Type: ev.Type, Object: obj, PrevObject: prev}
}
