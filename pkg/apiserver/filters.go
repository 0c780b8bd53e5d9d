package apiserver

import (
	"context"
	"net/http"
	"strconv"
	"strings"
)

// withFilters wraps the router in the request filters, outermost first as
// kube-apiserver orders them: request info, the Audit-ID, the request
// timeout, authentication, audit, impersonation, the in-flight limits,
// authorization, then the router. Each filter costs nothing when it is
// configured off.
func (s *Server) withFilters(router http.Handler) http.Handler {
	h := s.withAuthorization(router)
	h = s.withInFlightLimit(h)
	h = s.withImpersonation(h)
	h = s.withAudit(h)
	h = s.withAuthentication(h)
	h = s.withTimeout(h)
	h = s.withAuditID(h)
	return withRequestInfo(h)
}

type requestInfoKey struct{}

// withRequestInfo parses the request once for the filters after it.
func withRequestInfo(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ri := newRequestInfo(r)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, ri)))
	})
}

// requestInfoFrom returns the request's info, parsing it when no filter
// did (handlers called directly in tests).
func requestInfoFrom(r *http.Request) *requestInfo {
	if ri, ok := r.Context().Value(requestInfoKey{}).(*requestInfo); ok {
		return ri
	}
	return newRequestInfo(r)
}

// fillRecord labels the metrics of a request the filters answer before it
// reaches its verb handler, as the router would have.
func (ri *requestInfo) fillRecord(rec *requestRecord) {
	if !ri.resourceRequest {
		return
	}
	switch ri.verb {
	case "create":
		rec.verb = "POST"
	case "update":
		rec.verb = "PUT"
	default:
		rec.verb = strings.ToUpper(ri.verb)
	}
	rec.group, rec.version, rec.resource, rec.subresource = ri.apiGroup, ri.apiVersion, ri.resource, ri.subresource
	switch {
	case ri.name != "":
		rec.scope = "resource"
	case ri.namespace != "":
		rec.scope = "namespace"
	default:
		rec.scope = "cluster"
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
