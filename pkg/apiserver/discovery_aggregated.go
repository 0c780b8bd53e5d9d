package apiserver

import (
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// discoveryDocs are the discovery documents of one resourceSet, built on
// the first request after the set changed (a CRD established, changed or
// removed) and read only after: the server's discovery field always holds
// the documents of a set, and a request serves those of the set it loaded.
type discoveryDocs struct {
	set  *resourceSet
	desc *apiDescription
	// core and groups are the aggregated documents of /api and /apis.
	core, groups *aggregatedDocument
}

// aggregatedDocument is one APIGroupDiscoveryList, its ETag and its
// encodings.
type aggregatedDocument struct {
	list *apidiscoveryv2.APIGroupDiscoveryList
	// encoded holds the list encoded in each of discoveryMediaTypes (by
	// index), encoded on first use.
	encoded [len(discoveryMediaTypes)]struct {
		once sync.Once
		data []byte
		err  error
	}
	// etag is the quoted ETag header value: as kube-apiserver computes it,
	// the upper-case hex SHA-512 of the list's JSON without its type
	// meta, so the same resources give the same ETag in every encoding and
	// on every server.
	etag string
}

// discovery returns the discovery documents of what the server serves now.
// It is safe for concurrent use; concurrent first requests after a change
// may each build the documents, which are the same.
func (s *Server) discovery() *discoveryDocs {
	set := s.served.Load()
	if d := s.discoveryDocs.Load(); d != nil && d.set == set {
		return d
	}
	desc := s.describeAPIs(set)
	d := &discoveryDocs{set: set, desc: desc}
	var core []*groupDescription
	if desc.core != nil {
		core = []*groupDescription{desc.core}
	}
	d.core = newAggregatedDocument(core)
	d.groups = newAggregatedDocument(desc.groups)
	s.discoveryDocs.Store(d)
	return d
}

func newAggregatedDocument(groups []*groupDescription) *aggregatedDocument {
	list := &apidiscoveryv2.APIGroupDiscoveryList{Items: []apidiscoveryv2.APIGroupDiscovery{}}
	for _, g := range groups {
		list.Items = append(list.Items, aggregatedGroup(g))
	}
	doc := &aggregatedDocument{list: list}
	// Without an ETag (the types failed to marshal, which they do not),
	// the document is served without one, as kube-apiserver does.
	if data, err := json.Marshal(list); err == nil {
		doc.etag = strconv.Quote(fmt.Sprintf("%X", sha512.Sum512(data)))
	}
	list.TypeMeta = metav1.TypeMeta{APIVersion: aggregatedDiscoveryGVK.GroupVersion().String(), Kind: aggregatedDiscoveryGVK.Kind}
	return doc
}

// aggregatedGroup renders g's aggregated entry from its description.
func aggregatedGroup(g *groupDescription) apidiscoveryv2.APIGroupDiscovery {
	out := apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: g.name}}
	for _, v := range g.versions {
		av := apidiscoveryv2.APIVersionDiscovery{Version: v.gv.Version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
		for _, r := range v.resources {
			av.Resources = append(av.Resources, aggregatedResource(v, r))
		}
		out.Versions = append(out.Versions, av)
	}
	return out
}

// aggregatedResource renders one resource of v as kube-apiserver converts
// its legacy entries: the kind with the group and version its entry names
// (none for a built-in's own kind, so empty; the group version for a custom
// resource), subresources folded in.
func aggregatedResource(v *versionDescription, r resourceDescription) apidiscoveryv2.APIResourceDiscovery {
	kind := func(a metav1.APIResource) *metav1.GroupVersionKind {
		gvk := &metav1.GroupVersionKind{Group: a.Group, Version: a.Version, Kind: a.Kind}
		if r.qualifiedKind && a.Group == "" && a.Version == "" {
			gvk.Group, gvk.Version = v.gv.Group, v.gv.Version
		}
		return gvk
	}
	scope := apidiscoveryv2.ScopeCluster
	if r.api.Namespaced {
		scope = apidiscoveryv2.ScopeNamespace
	}
	out := apidiscoveryv2.APIResourceDiscovery{
		Resource:         r.api.Name,
		ResponseKind:     kind(r.api),
		Scope:            scope,
		SingularResource: r.api.SingularName,
		Verbs:            r.api.Verbs,
		ShortNames:       r.api.ShortNames,
		Categories:       r.api.Categories,
	}
	for _, sub := range r.subresources {
		out.Subresources = append(out.Subresources, apidiscoveryv2.APISubresourceDiscovery{
			Subresource:  strings.TrimPrefix(sub.Name, r.api.Name+"/"),
			ResponseKind: kind(sub),
			Verbs:        sub.Verbs,
		})
	}
	return out
}

// encode returns the document encoded in m, one of discoveryMediaTypes.
// The bytes are shared: callers must not change them.
func (d *aggregatedDocument) encode(m discoveryMediaType) ([]byte, error) {
	i := slices.Index(discoveryMediaTypes[:], m)
	if i < 0 {
		return m.encode(d.list, aggregatedDiscoveryGVK)
	}
	e := &d.encoded[i]
	e.once.Do(func() { e.data, e.err = m.encode(d.list, aggregatedDiscoveryGVK) })
	return e.data, e.err
}

// serveAggregated answers a request for /api (core) or /apis with the
// aggregated document when its Accept header asks for it, and reports
// whether it did. As kube-apiserver does, the answer carries the document's
// ETag, Vary: Accept and Cache-Control: public, and is 304 Not Modified
// with no body when If-None-Match names the ETag.
func (s *Server) serveAggregated(w http.ResponseWriter, r *http.Request, core bool) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	m, ok := negotiateDiscovery(r.Header.Get("Accept"), true)
	if !ok {
		return false
	}
	docs := s.discovery()
	doc := docs.groups
	if core {
		doc = docs.core
	}
	h := w.Header()
	if doc.etag != "" {
		h.Set("ETag", doc.etag)
		h.Set("Vary", "Accept")
		h.Set("Cache-Control", "public")
		if r.Header.Get("If-None-Match") == doc.etag {
			w.WriteHeader(http.StatusNotModified)
			return true
		}
	}
	data, err := doc.encode(m)
	if err != nil {
		s.writeError(w, r, err)
		return true
	}
	h.Set("Content-Type", m.name+";g="+aggregatedDiscoveryGVK.Group+";v="+aggregatedDiscoveryGVK.Version+";as="+aggregatedDiscoveryGVK.Kind)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
	return true
}
