package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// ApplyOptions are the options of a server-side apply (ResourceClient.Apply,
// DynamicResourceClient.Apply and their ApplyStatus).
type ApplyOptions struct {
	// FieldManager names the applier: the server records the fields of the
	// configuration as owned by it, and removes those it owned before and
	// no longer applies. Required, as the server requires it.
	FieldManager string
	// Force takes the fields of the configuration from the managers that
	// own them instead of failing with 409 Conflict.
	Force bool
	// DryRun has the server do everything (merging, admission, validation)
	// but store the result; the answer is what would have been stored.
	DryRun bool
}

// patchOptions is opts on the wire: fieldManager, force and dryRun=All.
func (o ApplyOptions) patchOptions() metav1.PatchOptions {
	force := o.Force
	p := metav1.PatchOptions{FieldManager: o.FieldManager, Force: &force}
	if o.DryRun {
		p.DryRun = []string{metav1.DryRunAll}
	}
	return p
}

// Apply sends config as a server-side apply (a PATCH with content type
// application/apply-patch+yaml) and returns the object the server stored,
// which it creates when it does not exist yet.
//
// config is anything encoding/json turns into the applied object: an
// *unstructured.Unstructured, a map[string]any, or an apply configuration
// struct whose fields are all pointers, slices or maps tagged omitempty
// (such as the apply configurations client-go generates, which this
// package does not import but accepts). The configuration holds only the
// fields its manager has an opinion on: every field in it is claimed, and
// a field the manager applied before and leaves out now is removed unless
// another manager owns it too.
//
// A typed object such as *appsv1.Deployment is a poor configuration: the
// k8s.io/api types encode fields that are not omitempty even when unset,
// so a Deployment with only a name and a container is sent with
// "spec.selector": null, "spec.strategy": {}, "status": {} and
// "resources": {} in each container, and an unset int32 field without
// omitempty (such as a Service port's "port") as 0. The apply claims every
// field it sends, which makes conflicts with the managers that set those
// fields and can reset them.
//
// The object's name and namespace come from config's metadata. The name is
// required. For a namespaced resource an empty namespace is the client's;
// a namespace the client's contradicts is an error. apiVersion and kind are
// taken from the Resource descriptor when config has neither. A config
// that carries metadata.managedFields (as an object read from the server
// does) is refused before it is sent, as client-go refuses it; the server
// would answer 400 BadRequest "metadata.managedFields must be nil".
//
// A field owned by another manager with a different value fails the apply
// with 409 Conflict unless opts.Force: apierrors.IsConflict is true of the
// error, and the *apierrors.StatusError (errors.As) lists the fields and
// their managers in its Details.Causes.
func (r *ResourceClient[T]) Apply(ctx context.Context, config any, opts ApplyOptions) (T, error) {
	return r.apply(ctx, config, opts, "")
}

// ApplyStatus is Apply on the status subresource: config's status (with
// apiVersion, kind and metadata naming the object) is applied, and the
// manager's ownership is recorded for the status subresource. The object
// must exist: applying the status of a missing object is 404 NotFound.
func (r *ResourceClient[T]) ApplyStatus(ctx context.Context, config any, opts ApplyOptions) (T, error) {
	return r.apply(ctx, config, opts, "status")
}

func (r *ResourceClient[T]) apply(ctx context.Context, config any, opts ApplyOptions, sub string) (T, error) {
	var zero T
	if opts.FieldManager == "" {
		return zero, errors.New("client: apply: ApplyOptions.FieldManager is required")
	}
	body, meta, err := encodeApplyConfig(config, r.res.GroupVersion().String(), r.res.Kind)
	if err != nil {
		return zero, err
	}
	ns := r.namespace
	if r.res.Namespaced {
		switch {
		case ns == "":
			ns = meta.namespace
		case meta.namespace != "" && meta.namespace != ns:
			return zero, fmt.Errorf("client: apply: the namespace of the configuration (%q) does not match the client's (%q)", meta.namespace, ns)
		}
	}
	return r.applyTo(ctx, ns, meta.name, sub, body, opts)
}

// applyTo sends an apply of body to the object name in ns.
func (r *ResourceClient[T]) applyTo(ctx context.Context, ns, name, sub string, body []byte, opts ApplyOptions) (T, error) {
	var zero T
	path, err := r.objectPath(ns, name, sub)
	if err != nil {
		return zero, err
	}
	po := opts.patchOptions()
	q, err := encodeQuery(&po)
	if err != nil {
		return zero, err
	}
	return r.call(ctx, Request{
		Method: http.MethodPatch, Path: path, Query: q, Body: body,
		Header: http.Header{"Content-Type": {string(types.ApplyPatchType)}},
	}, name)
}

// Apply sends obj as a server-side apply, with the rules of
// ResourceClient.Apply: the name comes from obj, which needs apiVersion
// and kind; obj's namespace, when set, must be the client's (the client's
// namespace alone decides the URL, so a namespaced object needs a client
// from Namespace).
func (r *DynamicResourceClient) Apply(ctx context.Context, obj *unstructured.Unstructured, opts ApplyOptions) (*unstructured.Unstructured, error) {
	return r.apply(ctx, obj, opts, "")
}

// ApplyStatus is Apply on the status subresource of the object obj names.
func (r *DynamicResourceClient) ApplyStatus(ctx context.Context, obj *unstructured.Unstructured, opts ApplyOptions) (*unstructured.Unstructured, error) {
	return r.apply(ctx, obj, opts, "status")
}

func (r *DynamicResourceClient) apply(ctx context.Context, obj *unstructured.Unstructured, opts ApplyOptions, sub string) (*unstructured.Unstructured, error) {
	if obj == nil {
		return nil, errors.New("client: apply: object is nil")
	}
	if opts.FieldManager == "" {
		return nil, errors.New("client: apply: ApplyOptions.FieldManager is required")
	}
	body, meta, err := encodeApplyConfig(obj, "", "")
	if err != nil {
		return nil, err
	}
	if meta.apiVersion == "" || meta.kind == "" {
		return nil, errors.New("client: apply: the object needs apiVersion and kind")
	}
	ns := r.typed.namespace
	if meta.namespace != "" && meta.namespace != ns {
		if ns == "" {
			return nil, fmt.Errorf("client: apply: the object is in namespace %q but the client is cluster-wide: use Namespace(%q)", meta.namespace, meta.namespace)
		}
		return nil, fmt.Errorf("client: apply: the namespace of the object (%q) does not match the client's (%q)", meta.namespace, ns)
	}
	return r.typed.applyTo(ctx, ns, meta.name, sub, body, opts)
}

// applyMeta is what an apply needs to know of its configuration.
type applyMeta struct {
	apiVersion, kind, name, namespace string
}

// encodeApplyConfig encodes config as the JSON body of an apply, giving it
// apiVersion and kind when it has neither and they are known, and reads
// the identity of the object it names.
func encodeApplyConfig(config any, apiVersion, kind string) ([]byte, applyMeta, error) {
	var meta applyMeta
	if config == nil || isNilValue(config) {
		return nil, meta, errors.New("client: apply: configuration is nil")
	}
	data, err := utiljson.Marshal(config)
	if err != nil {
		return nil, meta, fmt.Errorf("client: apply: encode configuration: %w", err)
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(data, &obj); err != nil || obj == nil {
		return nil, meta, fmt.Errorf("client: apply: the configuration (%T) must encode to a JSON object", config)
	}
	meta.apiVersion, _ = obj["apiVersion"].(string)
	meta.kind, _ = obj["kind"].(string)
	m, _ := obj["metadata"].(map[string]any)
	meta.name, _ = m["name"].(string)
	meta.namespace, _ = m["namespace"].(string)
	if meta.name == "" {
		return nil, meta, errors.New("client: apply: the configuration needs metadata.name")
	}
	if mf, ok := m["managedFields"].([]any); ok && len(mf) > 0 {
		return nil, meta, errors.New("client: apply: the configuration has metadata.managedFields set: remove them (an object read from the server is not a configuration)")
	}
	if meta.apiVersion == "" && meta.kind == "" && kind != "" {
		obj["apiVersion"], obj["kind"] = apiVersion, kind
		meta.apiVersion, meta.kind = apiVersion, kind
		if data, err = utiljson.Marshal(obj); err != nil {
			return nil, meta, fmt.Errorf("client: apply: encode configuration: %w", err)
		}
	}
	return data, meta, nil
}

// isNilValue reports whether v is a nil pointer, map or interface held in
// an any.
func isNilValue(v any) bool {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Interface, reflect.Slice:
		return rv.IsNil()
	}
	return false
}
