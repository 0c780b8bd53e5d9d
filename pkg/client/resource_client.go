package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/kplane/kplane/pkg/cache"
)

// ResourceClient reads and writes the objects of one resource, in one
// namespace or in all of them. It is a small value: Namespace returns a
// copy. It is safe for concurrent use; objects passed in are not modified,
// and objects returned are new and owned by the caller.
type ResourceClient[T cache.Object] struct {
	c         *Client
	res       Resource[T]
	namespace string // "" is every namespace (list, watch) or the object's own (writes)

	// accept and listAccept, when set, are the Accept headers of requests
	// answered with one object (and of watches, whose events carry one
	// object each) and of lists; "" is plain application/json. The metadata
	// client sets them to ask for PartialObjectMetadata.
	accept, listAccept string
}

var _ cache.ListerWatcher[*corev1.Pod] = (*ResourceClient[*corev1.Pod])(nil)

// NewResource returns a client for resource res, for all namespaces.
func NewResource[T cache.Object](c *Client, res Resource[T]) *ResourceClient[T] {
	return &ResourceClient[T]{c: c, res: res}
}

// Namespace returns a client that works in namespace ns ("" for all
// namespaces). For a cluster-scoped resource the namespace is ignored.
func (r *ResourceClient[T]) Namespace(ns string) *ResourceClient[T] {
	cp := *r
	cp.namespace = ns
	return &cp
}

// Resource returns the descriptor the client was built from.
func (r *ResourceClient[T]) Resource() Resource[T] { return r.res }

// Get returns the object called name.
func (r *ResourceClient[T]) Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error) {
	var zero T
	path, err := r.objectPath(r.namespace, name, "")
	if err != nil {
		return zero, err
	}
	q, err := encodeQuery(&opts)
	if err != nil {
		return zero, err
	}
	return r.call(ctx, Request{Path: path, Query: q}, name)
}

// List returns one page of the objects that opts selects.
func (r *ResourceClient[T]) List(ctx context.Context, opts metav1.ListOptions) (*cache.List[T], error) {
	resp, err := r.listRaw(ctx, opts)
	if err != nil {
		return nil, err
	}
	var list struct {
		Metadata metav1.ListMeta `json:"metadata"`
		Items    []T             `json:"items"`
	}
	if err := utiljson.Unmarshal(resp.Body, &list); err != nil {
		return nil, fmt.Errorf("client: decode %s list: %w", r.res.Resource, err)
	}
	for i, item := range list.Items {
		if isNilPointer(item) {
			return nil, fmt.Errorf("client: decode %s list: item %d is null", r.res.Resource, i)
		}
	}
	return &cache.List[T]{ListMeta: list.Metadata, Items: list.Items}, nil
}

// listRaw sends a list request and returns the undecoded answer.
func (r *ResourceClient[T]) listRaw(ctx context.Context, opts metav1.ListOptions) (*Response, error) {
	path, err := r.collectionPath(r.namespace)
	if err != nil {
		return nil, err
	}
	opts.Watch = false
	q, err := encodeQuery(&opts)
	if err != nil {
		return nil, err
	}
	return r.c.do(ctx, Request{Path: path, Query: q, Header: acceptHeader(nil, r.listAccept)}, r.errorContext(""))
}

// Watch opens a watch on the objects that opts selects (opts.Watch is set
// for you). A refusal by the server, such as 410 Expired for a
// resourceVersion that is too old, is returned as an *apierrors.StatusError.
// The watch lasts until Stop, ctx's end, opts.TimeoutSeconds or the server
// closing it; the caller must call Stop.
func (r *ResourceClient[T]) Watch(ctx context.Context, opts metav1.ListOptions) (cache.Watch[T], error) {
	path, err := r.collectionPath(r.namespace)
	if err != nil {
		return nil, err
	}
	opts.Watch = true
	q, err := encodeQuery(&opts)
	if err != nil {
		return nil, err
	}
	return startWatch[T](ctx, r.c, Request{Path: path, Query: q, Header: acceptHeader(nil, r.accept)}, r.errorContext(""))
}

// Create stores obj, in the client's namespace or, when the client has
// none, in obj's.
func (r *ResourceClient[T]) Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error) {
	var zero T
	if isNilPointer(obj) {
		return zero, errors.New("client: create: object is nil")
	}
	ns := r.writeNamespace(obj)
	if r.res.Namespaced && ns == "" {
		return zero, fmt.Errorf("client: %s are namespaced: name a namespace (ResourceClient.Namespace, or the object's own)", r.res.Resource)
	}
	path, err := r.collectionPath(ns)
	if err != nil {
		return zero, err
	}
	return r.write(ctx, http.MethodPost, path, obj, &opts, obj.GetName())
}

// Update replaces the object named by obj; obj's resourceVersion, when set,
// must be the stored one or the server answers 409 Conflict.
func (r *ResourceClient[T]) Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	return r.update(ctx, obj, opts, "")
}

// UpdateStatus replaces the status of the object named by obj through the
// status subresource.
func (r *ResourceClient[T]) UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	return r.update(ctx, obj, opts, "status")
}

func (r *ResourceClient[T]) update(ctx context.Context, obj T, opts metav1.UpdateOptions, sub string) (T, error) {
	var zero T
	if isNilPointer(obj) {
		return zero, errors.New("client: update: object is nil")
	}
	path, err := r.objectPath(r.writeNamespace(obj), obj.GetName(), sub)
	if err != nil {
		return zero, err
	}
	return r.write(ctx, http.MethodPut, path, obj, &opts, obj.GetName())
}

// Patch applies a patch of type pt (types.MergePatchType,
// types.StrategicMergePatchType, types.JSONPatchType or types.ApplyPatchType)
// to the object called name, or to its subresource (such as "status") when
// one is given, and returns the object. For the scale subresource use
// PatchScale.
func (r *ResourceClient[T]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresource ...string) (T, error) {
	var zero T
	if len(subresource) > 1 {
		return zero, errors.New("client: patch: at most one subresource")
	}
	path, err := r.objectPath(r.namespace, name, strings.Join(subresource, ""))
	if err != nil {
		return zero, err
	}
	q, err := encodeQuery(&opts)
	if err != nil {
		return zero, err
	}
	if pt == "" {
		return zero, errors.New("client: patch: patch type is required")
	}
	return r.call(ctx, Request{
		Method: http.MethodPatch, Path: path, Query: q, Body: data,
		Header: http.Header{"Content-Type": {string(pt)}},
	}, name)
}

// Delete deletes the object called name. opts carries the propagation
// policy, preconditions, grace period and dry run, sent as the request body
// as client-go sends them.
func (r *ResourceClient[T]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	path, err := r.objectPath(r.namespace, name, "")
	if err != nil {
		return err
	}
	body, err := encodeDeleteOptions(opts)
	if err != nil {
		return err
	}
	_, err = r.c.do(ctx, Request{Method: http.MethodDelete, Path: path, Body: body}, r.errorContext(name))
	return err
}

// DeleteCollection deletes every object that listOpts selects.
func (r *ResourceClient[T]) DeleteCollection(ctx context.Context, opts metav1.DeleteOptions, listOpts metav1.ListOptions) error {
	path, err := r.collectionPath(r.namespace)
	if err != nil {
		return err
	}
	q, err := encodeQuery(&listOpts)
	if err != nil {
		return err
	}
	body, err := encodeDeleteOptions(opts)
	if err != nil {
		return err
	}
	_, err = r.c.do(ctx, Request{Method: http.MethodDelete, Path: path, Query: q, Body: body}, r.errorContext(""))
	return err
}

// GetScale returns the scale subresource of the object called name.
func (r *ResourceClient[T]) GetScale(ctx context.Context, name string, opts metav1.GetOptions) (*autoscalingv1.Scale, error) {
	path, err := r.objectPath(r.namespace, name, "scale")
	if err != nil {
		return nil, err
	}
	q, err := encodeQuery(&opts)
	if err != nil {
		return nil, err
	}
	resp, err := r.c.do(ctx, Request{Path: path, Query: q}, r.errorContext(name))
	if err != nil {
		return nil, err
	}
	return decodeScale(resp.Body)
}

// UpdateScale replaces the scale subresource of the object called name.
func (r *ResourceClient[T]) UpdateScale(ctx context.Context, name string, scale *autoscalingv1.Scale, opts metav1.UpdateOptions) (*autoscalingv1.Scale, error) {
	if scale == nil {
		return nil, errors.New("client: update scale: scale is nil")
	}
	path, err := r.objectPath(r.namespace, name, "scale")
	if err != nil {
		return nil, err
	}
	q, err := encodeQuery(&opts)
	if err != nil {
		return nil, err
	}
	s := *scale
	if s.Kind == "" && s.APIVersion == "" {
		s.TypeMeta = metav1.TypeMeta{Kind: "Scale", APIVersion: autoscalingv1.SchemeGroupVersion.String()}
	}
	body, err := utiljson.Marshal(&s)
	if err != nil {
		return nil, fmt.Errorf("client: encode scale: %w", err)
	}
	resp, err := r.c.do(ctx, Request{Method: http.MethodPut, Path: path, Query: q, Body: body}, r.errorContext(name))
	if err != nil {
		return nil, err
	}
	return decodeScale(resp.Body)
}

// PatchScale patches the scale subresource of the object called name (use
// this rather than Patch with "scale", whose answer is a Scale, not a T).
func (r *ResourceClient[T]) PatchScale(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions) (*autoscalingv1.Scale, error) {
	path, err := r.objectPath(r.namespace, name, "scale")
	if err != nil {
		return nil, err
	}
	q, err := encodeQuery(&opts)
	if err != nil {
		return nil, err
	}
	if pt == "" {
		return nil, errors.New("client: patch: patch type is required")
	}
	resp, err := r.c.do(ctx, Request{
		Method: http.MethodPatch, Path: path, Query: q, Body: data,
		Header: http.Header{"Content-Type": {string(pt)}},
	}, r.errorContext(name))
	if err != nil {
		return nil, err
	}
	return decodeScale(resp.Body)
}

func decodeScale(body []byte) (*autoscalingv1.Scale, error) {
	var s autoscalingv1.Scale
	if err := utiljson.Unmarshal(body, &s); err != nil {
		return nil, fmt.Errorf("client: decode scale: %w", err)
	}
	return &s, nil
}

// write sends obj with method to path and decodes the answer.
func (r *ResourceClient[T]) write(ctx context.Context, method, path string, obj T, opts runtime.Object, name string) (T, error) {
	var zero T
	q, err := encodeQuery(opts)
	if err != nil {
		return zero, err
	}
	body, err := r.encode(obj)
	if err != nil {
		return zero, err
	}
	return r.call(ctx, Request{Method: method, Path: path, Query: q, Body: body}, name)
}

// call sends req and decodes the answer into a new T.
func (r *ResourceClient[T]) call(ctx context.Context, req Request, name string) (T, error) {
	var zero T
	req.Header = acceptHeader(req.Header, r.accept)
	resp, err := r.c.do(ctx, req, r.errorContext(name))
	if err != nil {
		return zero, err
	}
	return r.decode(resp.Body)
}

func (r *ResourceClient[T]) decode(data []byte) (T, error) {
	var out T
	if err := utiljson.Unmarshal(data, &out); err != nil {
		return out, fmt.Errorf("client: decode %s: %w", r.res.Resource, err)
	}
	if isNilPointer(out) {
		return out, fmt.Errorf("client: decode %s: response is null", r.res.Resource)
	}
	return out, nil
}

// encode marshals obj with its apiVersion and kind set, as the API expects
// them in request bodies, without modifying obj.
func (r *ResourceClient[T]) encode(obj T) ([]byte, error) {
	var o runtime.Object = obj
	if gvk := obj.GetObjectKind().GroupVersionKind(); gvk.Kind == "" && gvk.Version == "" && r.res.Kind != "" {
		o = obj.DeepCopyObject()
		o.GetObjectKind().SetGroupVersionKind(r.res.GroupVersionKind())
	}
	data, err := utiljson.Marshal(o)
	if err != nil {
		return nil, fmt.Errorf("client: encode %s: %w", r.res.Resource, err)
	}
	return data, nil
}

// writeNamespace is the namespace a write of obj goes to.
func (r *ResourceClient[T]) writeNamespace(obj T) string {
	if r.namespace != "" {
		return r.namespace
	}
	return obj.GetNamespace()
}

func (r *ResourceClient[T]) errorContext(name string) errorContext {
	return errorContext{group: r.res.Group, resource: r.res.Resource, name: name}
}

// collectionPath is the URL path of the resource's collection in ns ("" for
// all namespaces).
func (r *ResourceClient[T]) collectionPath(ns string) (string, error) {
	if r.res.Resource == "" || r.res.Version == "" {
		return "", errors.New("client: resource descriptor needs a version and a resource")
	}
	if !r.res.Namespaced {
		ns = ""
	}
	if ns != "" {
		if err := validSegment("namespace", ns); err != nil {
			return "", err
		}
	}
	return CollectionPath(r.res.GroupVersionResource, ns), nil
}

// objectPath is the URL path of the object called name in ns, or of its
// subresource sub when sub is not empty. Segments are validated as client-go
// validates them.
func (r *ResourceClient[T]) objectPath(ns, name, sub string) (string, error) {
	if r.res.Namespaced && ns == "" {
		return "", fmt.Errorf("client: %s are namespaced: name a namespace (ResourceClient.Namespace, or the object's own)", r.res.Resource)
	}
	p, err := r.collectionPath(ns)
	if err != nil {
		return "", err
	}
	if err := validSegment("name", name); err != nil {
		return "", err
	}
	p += "/" + name
	if sub != "" {
		if err := validSegment("subresource", sub); err != nil {
			return "", err
		}
		p += "/" + sub
	}
	return p, nil
}

// validSegment rejects what cannot be one URL path segment.
func validSegment(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("client: %s may not be empty", what)
	case s == "." || s == "..":
		return fmt.Errorf("client: %s may not be %q", what, s)
	case strings.ContainsAny(s, "/%"):
		return fmt.Errorf("client: %s %q may not contain '/' or '%%'", what, s)
	}
	return nil
}

// encodeQuery encodes a meta/v1 options object as query parameters.
func encodeQuery(opts runtime.Object) (url.Values, error) {
	q, err := metav1.ParameterCodec.EncodeParameters(opts, metav1.SchemeGroupVersion)
	if err != nil {
		return nil, fmt.Errorf("client: encode %T: %w", opts, err)
	}
	return q, nil
}

func encodeDeleteOptions(opts metav1.DeleteOptions) ([]byte, error) {
	opts.TypeMeta = metav1.TypeMeta{Kind: "DeleteOptions", APIVersion: metav1.SchemeGroupVersion.String()}
	data, err := utiljson.Marshal(&opts)
	if err != nil {
		return nil, fmt.Errorf("client: encode delete options: %w", err)
	}
	return data, nil
}

// acceptHeader returns h with Accept set to accept; h itself when accept
// is empty (the default, application/json, then applies).
func acceptHeader(h http.Header, accept string) http.Header {
	if accept == "" {
		return h
	}
	if h == nil {
		h = make(http.Header, 1)
	}
	h.Set("Accept", accept)
	return h
}
