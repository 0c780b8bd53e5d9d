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
		s.openapiOnce.Do(func() {
			s.openapi, s.openapiErr = openapi.New(openapi.Config{
				Kinds:   s.openapiKinds(),
				Version: s.cfg.Version.GitVersion,
				Clock:   s.clock,
			})
		})
		if s.openapiErr != nil {
			s.writeError(w, r, s.openapiErr)
			return
		}
		h = s.openapi
	}
	h.ServeHTTP(w, r)
}

// openapiKinds describes the served resources to the OpenAPI builder.
func (s *Server) openapiKinds() []openapi.Kind {
	set := s.served.Load()
	kinds := make([]openapi.Kind, 0, len(set.order))
	for _, gvr := range set.order {
		res := set.byGVR[gvr]
		if res.custom != nil {
			// Custom resources have no Go type to build a schema from.
			continue
		}
		k := openapi.Kind{
			GVK:        res.info.GVK,
			Resource:   res.info.Resource,
			Namespaced: res.info.Namespaced,
			Object:     res.strategy.New(),
			List:       res.strategy.NewList(),
		}
		if res.info.Status {
			k.Subresources = append(k.Subresources, "status")
		}
		if res.info.Scale {
			k.Subresources = append(k.Subresources, "scale")
		}
		kinds = append(kinds, k)
	}
	for _, rr := range reviewResources() {
		kinds = append(kinds, openapi.Kind{GVK: rr.gvk, Resource: rr.resource, Object: rr.newObj(), CreateOnly: true})
	}
	return kinds
}
