package apiserver

import (
	"net/http"

	"github.com/kplane/kplane/pkg/apiserver/openapi"
)

// serveOpenAPI serves /openapi/v2 and /openapi/v3, building the default
// documents from the served resources on first use (it takes a moment, and
// most servers in tests never need them).
func (s *Server) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	h := s.cfg.OpenAPI
	if h == nil {
		docs, err := s.openapiDocs()
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		h = docs
	}
	h.ServeHTTP(w, r)
}

// openapiDocs returns the documents of the resources served now, built
// again after the set changed (CRDs created, changed or deleted).
func (s *Server) openapiDocs() (http.Handler, error) {
	set := s.served.Load()
	s.openapiMu.Lock()
	defer s.openapiMu.Unlock()
	if s.openapiSet == set {
		return s.openapi, s.openapiErr
	}
	s.openapi, s.openapiErr = openapi.New(openapi.Config{
		Kinds:   s.openapiKinds(set),
		Version: s.cfg.Version.GitVersion,
		Clock:   s.clock,
	})
	s.openapiSet = set
	return s.openapi, s.openapiErr
}

// openapiKinds describes the served resources to the OpenAPI builder.
func (s *Server) openapiKinds(set *resourceSet) []openapi.Kind {
	kinds := make([]openapi.Kind, 0, len(set.order))
	for _, gvr := range set.order {
		res := set.byGVR[gvr]
		k := openapi.Kind{
			GVK:        res.info.GVK,
			Resource:   res.info.Resource,
			Namespaced: res.info.Namespaced,
			Object:     res.strategy.New(),
			List:       res.strategy.NewList(),
		}
		if res.custom != nil {
			if k.Schema = res.custom.Schema(); k.Schema == nil {
				continue
			}
		}
		if res.info.Status {
			k.Subresources = append(k.Subresources, "status")
		}
		if res.info.Scale {
			k.Subresources = append(k.Subresources, "scale")
		}
		k.Subresources = append(k.Subresources, extraSubresources(res)...)
		kinds = append(kinds, k)
	}
	for _, rr := range reviewResources() {
		kinds = append(kinds, openapi.Kind{GVK: rr.gvk, Resource: rr.resource, Namespaced: rr.namespaced, Object: rr.newObj(), CreateOnly: true})
	}
	return kinds
}
