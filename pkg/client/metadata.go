package client

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kplane/kplane/pkg/cache"
)

// The Accept headers of the metadata client: the meta.k8s.io/v1
// PartialObjectMetadata(List) form first, plain JSON as the fallback for
// servers that cannot answer with it.
const (
	metadataAccept     = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
	metadataListAccept = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
)

// MetadataClient reads, watches, patches and deletes objects of any
// resource while transferring only their metadata, as
// *metav1.PartialObjectMetadata values. It asks the server for the
// PartialObjectMetadata form; a server that answers with the whole object
// instead still works (its metadata is read from it, and the TypeMeta is
// then the object's own). It is safe for concurrent use.
type MetadataClient struct {
	c *Client
}

// NewMetadata returns a metadata client that sends its requests through c.
func NewMetadata(c *Client) *MetadataClient { return &MetadataClient{c: c} }

// Resource returns a client for the metadata of resource gvr, cluster-wide;
// scope follows the namespace as for DynamicClient.Resource.
func (m *MetadataClient) Resource(gvr schema.GroupVersionResource) *MetadataResourceClient {
	return newMetadataResource(m.c, gvr, "")
}

func newMetadataResource(c *Client, gvr schema.GroupVersionResource, ns string) *MetadataResourceClient {
	typed := NewResource(c, Resource[*metav1.PartialObjectMetadata]{GroupVersionResource: gvr, Namespaced: ns != ""}).Namespace(ns)
	typed.accept, typed.listAccept = metadataAccept, metadataListAccept
	return &MetadataResourceClient{typed: typed}
}

// MetadataResourceClient is the metadata client of one resource. It is a
// small value: Namespace returns a copy. It is safe for concurrent use;
// objects returned are new and owned by the caller. Options, errors and
// retries are those of the same ResourceClient methods, whose code it runs.
type MetadataResourceClient struct {
	typed *ResourceClient[*metav1.PartialObjectMetadata] // namespaced exactly when typed.namespace is set
}

// Namespace returns a client that works in namespace ns ("" for
// cluster-wide paths).
func (r *MetadataResourceClient) Namespace(ns string) *MetadataResourceClient {
	return newMetadataResource(r.typed.c, r.typed.res.GroupVersionResource, ns)
}

// Get returns the metadata of the object called name.
func (r *MetadataResourceClient) Get(ctx context.Context, name string, opts metav1.GetOptions) (*metav1.PartialObjectMetadata, error) {
	return r.typed.Get(ctx, name, opts)
}

// List returns the metadata of one page of the objects that opts selects.
func (r *MetadataResourceClient) List(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	list, err := r.typed.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	out := &metav1.PartialObjectMetadataList{
		TypeMeta: metav1.TypeMeta{APIVersion: metav1.SchemeGroupVersion.String(), Kind: "PartialObjectMetadataList"},
		ListMeta: list.ListMeta,
		Items:    make([]metav1.PartialObjectMetadata, len(list.Items)),
	}
	for i, item := range list.Items {
		out.Items[i] = *item
	}
	return out, nil
}

// Watch opens a watch whose events carry the objects' metadata. The caller
// must call Stop.
func (r *MetadataResourceClient) Watch(ctx context.Context, opts metav1.ListOptions) (cache.Watch[*metav1.PartialObjectMetadata], error) {
	return r.typed.Watch(ctx, opts)
}

// Patch applies a patch of type pt to the object called name (or to its
// subresource) and returns the patched object's metadata.
func (r *MetadataResourceClient) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresource ...string) (*metav1.PartialObjectMetadata, error) {
	return r.typed.Patch(ctx, name, pt, data, opts, subresource...)
}

// Delete deletes the object called name.
func (r *MetadataResourceClient) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return r.typed.Delete(ctx, name, opts)
}

// DeleteCollection deletes every object that listOpts selects.
func (r *MetadataResourceClient) DeleteCollection(ctx context.Context, opts metav1.DeleteOptions, listOpts metav1.ListOptions) error {
	return r.typed.DeleteCollection(ctx, opts, listOpts)
}

// ListerWatcher returns r as a cache.ListerWatcher, so that an informer can
// keep a cache of metadata only.
func (r *MetadataResourceClient) ListerWatcher() cache.ListerWatcher[*metav1.PartialObjectMetadata] {
	return r.typed
}
