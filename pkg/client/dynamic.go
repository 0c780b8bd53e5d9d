package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kplane/kplane/pkg/cache"
)

// DynamicClient reads and writes objects of any resource as
// *unstructured.Unstructured values, for resources whose Go types the
// program does not have, such as custom resources. It is safe for
// concurrent use.
type DynamicClient struct {
	c *Client
}

// NewDynamic returns a dynamic client that sends its requests through c.
func NewDynamic(c *Client) *DynamicClient { return &DynamicClient{c: c} }

// Resource returns a client for the resource gvr, cluster-wide: without a
// Namespace it addresses cluster-scoped objects, and lists or watches a
// namespaced resource across all namespaces.
func (d *DynamicClient) Resource(gvr schema.GroupVersionResource) *DynamicResourceClient {
	return &DynamicResourceClient{typed: NewResource(d.c, Resource[*unstructured.Unstructured]{GroupVersionResource: gvr})}
}

// DynamicResourceClient is the dynamic client of one resource. Unlike a
// ResourceClient it does not know the resource's scope: as in client-go,
// the client's namespace alone decides the URL (set: namespaced paths;
// empty: cluster-wide paths), and the namespace of an object passed in is
// not consulted. It is a small value: Namespace returns a copy. It is safe
// for concurrent use; objects passed in are not modified, and objects
// returned are new and owned by the caller.
//
// Every method has the options, the errors (*apierrors.StatusError) and the
// retry behaviour of the same ResourceClient method, whose code it runs.
type DynamicResourceClient struct {
	// typed carries the requests. Its descriptor has no Kind (objects carry
	// their own apiVersion and kind) and is namespaced exactly when
	// typed.namespace is set.
	typed *ResourceClient[*unstructured.Unstructured]
}

// Namespace returns a client that works in namespace ns ("" for
// cluster-wide paths).
func (r *DynamicResourceClient) Namespace(ns string) *DynamicResourceClient {
	res := r.typed.res
	res.Namespaced = ns != ""
	return &DynamicResourceClient{typed: NewResource(r.typed.c, res).Namespace(ns)}
}

// GroupVersionResource is the resource the client addresses.
func (r *DynamicResourceClient) GroupVersionResource() schema.GroupVersionResource {
	return r.typed.res.GroupVersionResource
}

// Get returns the object called name.
func (r *DynamicResourceClient) Get(ctx context.Context, name string, opts metav1.GetOptions, subresource ...string) (*unstructured.Unstructured, error) {
	if len(subresource) == 0 {
		return r.typed.Get(ctx, name, opts)
	}
	if len(subresource) > 1 {
		return nil, errors.New("client: get: at most one subresource")
	}
	path, err := r.typed.objectPath(r.typed.namespace, name, subresource[0])
	if err != nil {
		return nil, err
	}
	q, err := encodeQuery(&opts)
	if err != nil {
		return nil, err
	}
	return r.typed.call(ctx, Request{Path: path, Query: q}, name)
}

// List returns one page of the objects that opts selects. The items of a
// built-in resource's list arrive without apiVersion and kind; they are
// given the list's apiVersion and its kind without the "List" suffix.
func (r *DynamicResourceClient) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	resp, err := r.typed.listRaw(ctx, opts)
	if err != nil {
		return nil, err
	}
	list := &unstructured.UnstructuredList{}
	if err := list.UnmarshalJSON(resp.Body); err != nil {
		return nil, fmt.Errorf("client: decode %s list: %w", r.typed.res.Resource, err)
	}
	return list, nil
}

// Watch opens a watch, as ResourceClient.Watch does; events carry
// *unstructured.Unstructured objects. The caller must call Stop.
func (r *DynamicResourceClient) Watch(ctx context.Context, opts metav1.ListOptions) (cache.Watch[*unstructured.Unstructured], error) {
	return r.typed.Watch(ctx, opts)
}

// Create stores obj in the client's namespace. The subresource, when one is
// given, is created on the object named by obj (such as "eviction").
func (r *DynamicResourceClient) Create(ctx context.Context, obj *unstructured.Unstructured, opts metav1.CreateOptions, subresource ...string) (*unstructured.Unstructured, error) {
	if obj == nil {
		return nil, errors.New("client: create: object is nil")
	}
	var path string
	var err error
	switch len(subresource) {
	case 0:
		path, err = r.typed.collectionPath(r.typed.namespace)
	case 1:
		path, err = r.typed.objectPath(r.typed.namespace, obj.GetName(), subresource[0])
	default:
		err = errors.New("client: create: at most one subresource")
	}
	if err != nil {
		return nil, err
	}
	return r.typed.write(ctx, http.MethodPost, path, obj, &opts, obj.GetName())
}

// Update replaces the object named by obj; obj's resourceVersion, when set,
// must be the stored one or the server answers 409 Conflict.
func (r *DynamicResourceClient) Update(ctx context.Context, obj *unstructured.Unstructured, opts metav1.UpdateOptions) (*unstructured.Unstructured, error) {
	return r.typed.Update(ctx, obj, opts)
}

// UpdateStatus replaces the status of the object named by obj through the
// status subresource.
func (r *DynamicResourceClient) UpdateStatus(ctx context.Context, obj *unstructured.Unstructured, opts metav1.UpdateOptions) (*unstructured.Unstructured, error) {
	return r.typed.UpdateStatus(ctx, obj, opts)
}

// Patch applies a patch of type pt to the object called name, or to its
// subresource when one is given, and returns what the server answers (for
// "scale", the Scale object as an Unstructured).
func (r *DynamicResourceClient) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresource ...string) (*unstructured.Unstructured, error) {
	return r.typed.Patch(ctx, name, pt, data, opts, subresource...)
}

// Delete deletes the object called name.
func (r *DynamicResourceClient) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return r.typed.Delete(ctx, name, opts)
}

// DeleteCollection deletes every object that listOpts selects.
func (r *DynamicResourceClient) DeleteCollection(ctx context.Context, opts metav1.DeleteOptions, listOpts metav1.ListOptions) error {
	return r.typed.DeleteCollection(ctx, opts, listOpts)
}

// GetScale returns the scale subresource of the object called name.
func (r *DynamicResourceClient) GetScale(ctx context.Context, name string, opts metav1.GetOptions) (*autoscalingv1.Scale, error) {
	return r.typed.GetScale(ctx, name, opts)
}

// UpdateScale replaces the scale subresource of the object called name.
func (r *DynamicResourceClient) UpdateScale(ctx context.Context, name string, scale *autoscalingv1.Scale, opts metav1.UpdateOptions) (*autoscalingv1.Scale, error) {
	return r.typed.UpdateScale(ctx, name, scale, opts)
}

// ListerWatcher returns r as a cache.ListerWatcher, so that a Reflector or
// an informer can keep a cache of *unstructured.Unstructured objects. Its
// List returns the items of List as pointers into a cache.List.
func (r *DynamicResourceClient) ListerWatcher() cache.ListerWatcher[*unstructured.Unstructured] {
	return dynamicListerWatcher{r}
}

// dynamicListerWatcher adapts List to the cache's list type.
type dynamicListerWatcher struct{ r *DynamicResourceClient }

var _ cache.ListerWatcher[*unstructured.Unstructured] = dynamicListerWatcher{}

func (lw dynamicListerWatcher) List(ctx context.Context, opts metav1.ListOptions) (*cache.List[*unstructured.Unstructured], error) {
	list, err := lw.r.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	out := &cache.List[*unstructured.Unstructured]{
		ListMeta: metav1.ListMeta{
			ResourceVersion:    list.GetResourceVersion(),
			Continue:           list.GetContinue(),
			RemainingItemCount: list.GetRemainingItemCount(),
		},
		Items: make([]*unstructured.Unstructured, len(list.Items)),
	}
	for i := range list.Items {
		out.Items[i] = &list.Items[i]
	}
	return out, nil
}

func (lw dynamicListerWatcher) Watch(ctx context.Context, opts metav1.ListOptions) (cache.Watch[*unstructured.Unstructured], error) {
	return lw.r.Watch(ctx, opts)
}
