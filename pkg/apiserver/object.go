package apiserver

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kplane/kplane/pkg/registry"
	"github.com/kplane/kplane/pkg/storage"
)

// key is the storage key of one object.
func (res *resource) key(namespace, name string) string {
	if res.info.Namespaced {
		return res.root + "/" + namespace + "/" + name
	}
	return res.root + "/" + name
}

// prefix is the storage key a list or watch covers, recursively.
func (res *resource) prefix(namespace string) string {
	if res.info.Namespaced && namespace != "" {
		return res.root + "/" + namespace
	}
	return res.root
}

func (res *resource) gr() schema.GroupResource {
	return schema.GroupResource{Group: res.info.GVK.Group, Resource: res.info.Resource}
}

func (res *resource) gk() schema.GroupKind { return res.info.GVK.GroupKind() }

// setKind sets the object's apiVersion and kind to the resource's. A
// custom resource also gets its schema's defaults: Kubernetes defaults
// what it reads, so objects stored before a default was added show it.
func (res *resource) setKind(obj runtime.Object) {
	obj.GetObjectKind().SetGroupVersionKind(res.info.GVK)
	if res.custom != nil && res.custom.HasDefaults() {
		res.custom.Default(obj)
	}
}

// setListKind sets a list's apiVersion and kind, and clears its items'
// (kube-apiserver's list items carry no apiVersion or kind, but those of
// custom resources do, in the version asked for).
func (res *resource) setListKind(list runtime.Object) {
	list.GetObjectKind().SetGroupVersionKind(res.info.ListGVK())
	item := schema.GroupVersionKind{}
	if res.custom != nil {
		item = res.info.GVK
	}
	defaults := res.custom != nil && res.custom.HasDefaults()
	_ = meta.EachListItem(list, func(o runtime.Object) error {
		o.GetObjectKind().SetGroupVersionKind(item)
		if defaults {
			res.custom.Default(o)
		}
		return nil
	})
}

func accessor(obj runtime.Object) metav1.Object {
	m, err := meta.Accessor(obj)
	if err != nil {
		// Every served type has ObjectMeta; registry guarantees it.
		panic(fmt.Sprintf("apiserver: %T has no metadata: %v", obj, err))
	}
	return m
}

// invalid returns the 422 answer for validation errors.
func (res *resource) invalid(name string, errs field.ErrorList) error {
	return apierrors.NewInvalid(res.gk(), name, errs)
}

// checkNamespace makes sure a namespaced object may be created in ns: the
// namespace exists and is not being deleted.
func (s *Server) checkNamespace(ctx context.Context, gr schema.GroupResource, name, ns string) error {
	nsres := s.lookup(corev1.SchemeGroupVersion.WithResource("namespaces"))
	if nsres == nil {
		return nil
	}
	obj := &corev1.Namespace{}
	if err := nsres.store.Get(ctx, nsres.key("", ns), storage.GetOptions{}, obj); err != nil {
		if storage.IsNotFound(err) {
			return apierrors.NewNotFound(nsres.gr(), ns)
		}
		return err
	}
	if obj.DeletionTimestamp != nil || obj.Status.Phase == corev1.NamespaceTerminating {
		err := apierrors.NewForbidden(gr, name, fmt.Errorf("unable to create new content in namespace %s because it is being terminated", ns))
		err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause, Message: fmt.Sprintf("namespace %s is being terminated", ns), Field: "metadata.namespace"}}
		return err
	}
	return nil
}

// storedAsServed reports whether stored objects are what this resource
// serves as they are: true for built-ins and for a custom resource's
// storage version when its schema has no defaults.
func (res *resource) storedAsServed() bool {
	return res.custom == nil || res.custom.StorageVersion() == res.info.GVK.GroupVersion() && !res.custom.HasDefaults()
}

// asServed returns obj, an object shared with other readers, as the
// resource serves it: obj itself, or a copy of a custom resource in the
// resource's version, defaulted by its schema.
func (res *resource) asServed(obj runtime.Object) runtime.Object {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || res.custom == nil {
		return obj
	}
	if res.custom.HasDefaults() {
		cp := u.DeepCopy()
		res.setKind(cp)
		return cp
	}
	if u.GetKind() == "" {
		// A bookmark carries only metadata; clients expect its kind too.
		cp := shallowCopy(u)
		cp.SetGroupVersionKind(res.info.GVK)
		return cp
	}
	return withAPIVersion(u, res.info.GVK.GroupVersion())
}

// withAPIVersion returns u when it has apiVersion gv, otherwise a shallow
// copy with that apiVersion: u may be shared with other readers.
func withAPIVersion(u *unstructured.Unstructured, gv schema.GroupVersion) *unstructured.Unstructured {
	if u.GetAPIVersion() == gv.String() {
		return u
	}
	cp := shallowCopy(u)
	cp.SetAPIVersion(gv.String())
	return cp
}

// shallowCopy copies u's top-level fields, so that they can be set without
// changing u; nested values stay shared.
func shallowCopy(u *unstructured.Unstructured) *unstructured.Unstructured {
	cp := &unstructured.Unstructured{Object: make(map[string]any, len(u.Object)+2)}
	for k, v := range u.Object {
		cp.Object[k] = v
	}
	return cp
}

// warnings returns what the resource's strategy warns about in obj, the
// object a write stored (a CRD whose schema uses an unknown format).
func (res *resource) warnings(obj runtime.Object) []string {
	if w, ok := res.strategy.(registry.Warner); ok && obj != nil {
		return w.Warnings(obj)
	}
	return nil
}
