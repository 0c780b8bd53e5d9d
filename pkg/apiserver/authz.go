package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/pkg/authentication"
	"github.com/kplane/kplane/pkg/authorization"
)

// authorize asks the Authorizer whether the request's user may make it
// and answers 403 Forbidden (or 500 when the authorizer failed without
// allowing) when not, as kube-apiserver's authorization filter does. With
// no Authorizer every request is allowed.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) bool {
	if s.authz == nil {
		return true
	}
	if err := s.authorizeAttrs(r.Context(), requestAttributes(r, requestUser(r))); err != nil {
		s.writeError(w, r, err)
		return false
	}
	return true
}

// authorizeAttrs asks the Authorizer about attrs: nil when allowed, else the 403
// (or, when the authorizer failed without allowing, the 500) to answer.
func (s *Server) authorizeAttrs(ctx context.Context, attrs authorization.Attributes) error {
	d, reason, err := s.authz.Authorize(ctx, attrs)
	switch {
	case d == authorization.DecisionAllow:
		return nil
	case err != nil:
		return apierrors.NewInternalError(fmt.Errorf("authorizing the request: %w", err))
	}
	return forbidden(attrs, reason)
}

// authorizeCreate checks, for an update or an apply about to create its
// object, that the client may also create it.
func (s *Server) authorizeCreate(q *request) error {
	if s.authz == nil || q.http == nil {
		return nil
	}
	attrs := requestAttributes(q.http, requestUser(q.http))
	attrs.Verb = "create"
	return s.authorizeAttrs(q.http.Context(), attrs)
}

// forbidden is kube-apiserver's 403 for a denied request: who may not do
// what to which resource or path, and the authorizer's reason after ": ".
func forbidden(a authorization.Attributes, reason string) *apierrors.StatusError {
	name := ""
	if a.User != nil {
		name = a.User.Name
	}
	var msg string
	switch {
	case !a.ResourceRequest:
		msg = fmt.Sprintf("User %q cannot %s path %q", name, a.Verb, a.Path)
	default:
		res := a.Resource
		if a.Subresource != "" {
			res += "/" + a.Subresource
		}
		if a.Namespace != "" {
			msg = fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q", name, a.Verb, res, a.APIGroup, a.Namespace)
		} else {
			msg = fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope", name, a.Verb, res, a.APIGroup)
		}
	}
	msg = strings.ToValidUTF8(msg, "\uFFFD")
	if reason != "" {
		msg += ": " + reason
	}
	gr := schema.GroupResource{Group: a.APIGroup, Resource: a.Resource}
	return apierrors.NewForbidden(gr, a.Name, messageError(msg))
}

// requestAttributes describes r for authorization as kube-apiserver's
// request info does, from the path and method alone (before routing, so
// that a path the server does not serve is still authorized and a denied
// client learns nothing about what exists):
//
//   - /api/{version}/... and /apis/{group}/{version}/... with at least a
//     resource are resource requests; everything else (/api, /apis/{group},
//     /healthz ...) is a non-resource request whose verb is the lowercase
//     HTTP method;
//   - the verb is create for POST, update for PUT, patch for PATCH,
//     delete for DELETE, get for GET and HEAD; a get without a name is
//     a list, or a watch with ?watch=true or a /watch/ path; a delete
//     without a name is a deletecollection;
//   - /namespaces/{ns}/{resource}/... sets the namespace, and a request
//     for a namespace itself has the namespace as its namespace too;
//   - a list or watch whose field selector requires metadata.name=<name>
//     is about that name.
func requestAttributes(r *http.Request, u *authentication.User) authorization.Attributes {
	a := authorization.Attributes{User: u, Path: r.URL.Path, Verb: strings.ToLower(r.Method)}
	parts := splitPath(r.URL.Path)
	if len(parts) < 3 || (parts[0] != "api" && parts[0] != "apis") {
		return a
	}
	prefix := parts[0]
	parts = parts[1:]
	if prefix == "apis" {
		if len(parts) < 3 {
			return a
		}
		a.APIGroup = parts[0]
		parts = parts[1:]
	}
	a.ResourceRequest = true
	a.APIVersion = parts[0]
	parts = parts[1:]
	if parts[0] == "watch" || parts[0] == "proxy" {
		if len(parts) < 2 {
			// kube-apiserver cannot tell the resource either: nothing
			// is served here, so only an authorizer allowing everything
			// lets it through to a 404.
			a.Verb = parts[0]
			return a
		}
		a.Verb = parts[0]
		parts = parts[1:]
	} else {
		switch r.Method {
		case http.MethodPost:
			a.Verb = "create"
		case http.MethodGet, http.MethodHead:
			a.Verb = "get"
		case http.MethodPut:
			a.Verb = "update"
		case http.MethodPatch:
			a.Verb = "patch"
		case http.MethodDelete:
			a.Verb = "delete"
		default:
			a.Verb = ""
		}
	}
	if parts[0] == "namespaces" {
		if len(parts) > 1 {
			a.Namespace = parts[1]
			if len(parts) > 2 && parts[2] != "status" && parts[2] != "finalize" {
				parts = parts[2:]
			}
		}
	}
	if len(parts) >= 3 && a.Verb != "proxy" {
		a.Subresource = parts[2]
	}
	if len(parts) >= 2 {
		a.Name = parts[1]
	}
	a.Resource = parts[0]
	if a.Name == "" && a.Verb == "get" {
		q := r.URL.Query()
		a.Verb = "list"
		if w, _ := queryBool(q, "watch"); w {
			a.Verb = "watch"
		}
		if fs := q.Get("fieldSelector"); fs != "" {
			if sel, err := fields.ParseSelector(fs); err == nil {
				if name, ok := sel.RequiresExactMatch("metadata.name"); ok && len(content.IsPathSegmentName(name)) == 0 {
					a.Name = name
				}
			}
		}
	}
	if a.Name == "" && a.Verb == "delete" {
		a.Verb = "deletecollection"
	}
	return a
}

// splitPath splits a URL path into its segments, "" for "/".
func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}
