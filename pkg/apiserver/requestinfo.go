package apiserver

import (
	"net/http"
	"strings"
)

// requestInfo is what the filters in front of routing (in-flight limits,
// the request timeout, audit) need to know about a request, read from its
// path and method alone as kube-apiserver's request info resolver does.
// It is not validated: routing still decides whether the resource exists.
type requestInfo struct {
	// resourceRequest is set for paths below /api/{v} and /apis/{g}/{v}
	// that name a resource; the fields below it are empty otherwise.
	resourceRequest bool
	// verb is the Kubernetes verb (get, list, watch, create, update,
	// patch, delete, deletecollection, proxy) of a resource request, or
	// the lower-case HTTP method of any other request.
	verb                      string
	apiGroup, apiVersion      string
	namespace, resource, name string
	subresource               string
	// path is the URL path, for non-resource rules.
	path string
}

// longRunningSubresources are the pod subresources kube-apiserver treats
// as long-running (streams to a kubelet); kplane answers them with 404 at
// once, but they stay exempt from limits and timeouts as in kube.
var longRunningSubresources = map[string]bool{"attach": true, "exec": true, "proxy": true, "log": true, "portforward": true}

// longRunning reports whether the request may stay open indefinitely, so
// that the in-flight limits and the request timeout do not apply to it.
func (ri *requestInfo) longRunning() bool {
	if !ri.resourceRequest {
		return false
	}
	return ri.verb == "watch" || ri.verb == "proxy" || longRunningSubresources[ri.subresource]
}

// isHealth tells the health endpoints, which load must never refuse.
func isHealth(path string) bool {
	for _, p := range []string{"/healthz", "/livez", "/readyz"} {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// newRequestInfo parses r. It never fails: what it cannot read as a
// resource request is a non-resource request.
func newRequestInfo(r *http.Request) *requestInfo {
	ri := &requestInfo{path: r.URL.Path, verb: strings.ToLower(r.Method)}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var rest []string
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		ri.apiVersion, rest = parts[1], parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		ri.apiGroup, ri.apiVersion, rest = parts[1], parts[2], parts[3:]
	default:
		return ri
	}
	ri.resourceRequest = true
	watchPath := false
	switch rest[0] {
	case "watch":
		watchPath, rest = true, rest[1:]
	case "proxy":
		ri.verb, rest = "proxy", rest[1:]
	}
	if len(rest) >= 2 && rest[0] == "namespaces" {
		ri.namespace = rest[1]
		if len(rest) > 2 && rest[2] != "status" && rest[2] != "finalize" {
			rest = rest[2:]
		} else {
			// The namespace object itself (or its subresource).
			ri.name, ri.namespace = rest[1], ""
			ri.resource = "namespaces"
			if len(rest) > 2 {
				ri.subresource = rest[2]
			}
			rest = nil
		}
	}
	if len(rest) > 0 {
		ri.resource = rest[0]
	}
	if len(rest) > 1 {
		ri.name = rest[1]
	}
	if len(rest) > 2 {
		ri.subresource = strings.Join(rest[2:], "/")
	}
	if ri.verb == "proxy" {
		return ri
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		w := r.URL.Query().Get("watch")
		switch {
		case watchPath || w == "1" || w == "true":
			ri.verb = "watch"
		case ri.name == "":
			ri.verb = "list"
		default:
			ri.verb = "get"
		}
	case http.MethodPost:
		ri.verb = "create"
	case http.MethodPut:
		ri.verb = "update"
	case http.MethodPatch:
		ri.verb = "patch"
	case http.MethodDelete:
		ri.verb = "delete"
		if ri.name == "" {
			ri.verb = "deletecollection"
		}
	}
	return ri
}
