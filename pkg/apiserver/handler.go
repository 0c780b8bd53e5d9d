package apiserver

import (
	"fmt"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// request is a parsed resource request.
type request struct {
	verb        string // get, list, watch, create, update, patch, delete or deletecollection
	res         *resource
	namespace   string
	name        string
	subresource string
	// createMissing makes an update create the object when it does not
	// exist, whatever the resource allows (a server-side apply does).
	createMissing bool
	// http is the client's request, when a write made through update or
	// patch may create the object: creating needs the create permission
	// too, as in kube-apiserver.
	http *http.Request
	// adm is set for a client's write, which goes through admission.
	adm *writeAdmission
}

// gr returns the group and resource the request concerns, for errors.
func (q *request) gr() schema.GroupResource {
	return schema.GroupResource{Group: q.res.info.GVK.Group, Resource: q.res.info.Resource}
}

// serveHTTP routes a request after the metrics wrapper. A panicking
// handler is answered with a 500 Status (when nothing was written yet) and
// logged, as kube-apiserver does, instead of a dropped connection.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	tw := &trackingWriter{ResponseWriter: w}
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		if v == http.ErrAbortHandler {
			panic(v)
		}
		s.log.Error("handler panic", "method", r.Method, "uri", r.URL.RequestURI(), "panic", v, "stack", string(debug.Stack()))
		if !tw.wrote {
			s.writeError(tw, r, apierrors.NewInternalError(fmt.Errorf("panic: %v", v)))
			return
		}
		// The answer is already partly sent: end the connection.
		panic(http.ErrAbortHandler)
	}()
	if s.serveIssuerDiscovery(tw, r) {
		return
	}
	s.route(tw, r)
}

// trackingWriter remembers whether a response was started.
type trackingWriter struct {
	http.ResponseWriter
	wrote bool
	// warned records the request's warnings (see addWarnings).
	warned warningRecorder
}

func (w *trackingWriter) WriteHeader(code int) {
	w.wrote = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *trackingWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *trackingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// route dispatches a request to the handler of its path.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	switch {
	case path == "/healthz" || path == "/livez" || path == "/readyz" ||
		strings.HasPrefix(path, "/healthz/") || strings.HasPrefix(path, "/livez/") || strings.HasPrefix(path, "/readyz/"):
		s.serveHealth(w, r)
		return
	case path == "/version" || path == "/version/":
		s.serveVersion(w, r)
		return
	case path == "/openapi/v2" || strings.HasPrefix(path, "/openapi/"):
		s.serveOpenAPI(w, r)
		return
	case path == "/":
		s.serveRoot(w, r)
		return
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var gv schema.GroupVersion
	var rest []string
	switch parts[0] {
	case "api":
		if len(parts) == 1 {
			s.serveAPIVersions(w, r)
			return
		}
		gv, rest = schema.GroupVersion{Version: parts[1]}, parts[2:]
	case "apis":
		switch len(parts) {
		case 1:
			s.serveAPIGroupList(w, r)
			return
		case 2:
			s.serveAPIGroup(w, r, parts[1])
			return
		}
		gv, rest = schema.GroupVersion{Group: parts[1], Version: parts[2]}, parts[3:]
	default:
		s.writeError(w, r, notFound())
		return
	}
	if slices.Contains(rest, "") {
		// An empty segment (a//b) names no namespace, resource or object:
		// it must not widen a request to every namespace.
		s.writeError(w, r, notFound())
		return
	}
	if len(rest) == 0 {
		s.serveAPIResourceList(w, r, gv)
		return
	}
	if s.serveReview(w, r, gv, rest) {
		return
	}
	q, err := s.parseRequest(r, gv, rest)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	rec := recordFrom(r.Context())
	rec.verb = strings.ToUpper(q.verb)
	if q.verb == "create" {
		rec.verb = "POST"
	}
	if q.verb == "update" {
		rec.verb = "PUT"
	}
	rec.group, rec.version, rec.resource, rec.subresource = gv.Group, gv.Version, q.res.info.Resource, q.subresource
	switch {
	case q.name != "":
		rec.scope = "resource"
	case q.namespace != "":
		rec.scope = "namespace"
	default:
		rec.scope = "cluster"
	}
	if cr := q.res.custom; cr != nil {
		if q.verb == "create" && q.res.terminating {
			err := apierrors.NewMethodNotSupported(q.gr(), q.verb)
			err.ErrStatus.Message = "create not allowed while custom resource definition is terminating"
			s.writeError(w, r, err)
			return
		}
		if msg := cr.DeprecationWarning(); msg != "" {
			addWarnings(w, []string{msg})
		}
	} else if msg := q.res.deprecation(); msg != "" {
		addWarnings(w, []string{msg})
	}
	switch q.verb {
	case "get":
		s.serveGet(w, r, q)
	case "list":
		s.serveList(w, r, q)
	case "watch":
		s.serveWatch(w, r, q)
	case "create":
		if q.subresource == "binding" {
			s.serveBinding(w, r, q)
			return
		}
		if q.subresource == "token" {
			s.serveTokenRequest(w, r, q)
			return
		}
		if q.subresource == "eviction" {
			s.serveEviction(w, r, q)
			return
		}
		s.serveCreate(w, r, q)
	case "update":
		s.serveUpdate(w, r, q)
	case "patch":
		s.servePatch(w, r, q)
	case "delete":
		s.serveDelete(w, r, q)
	case "deletecollection":
		s.serveDeleteCollection(w, r, q)
	}
}

// parseRequest resolves a resource path below /api/{v} or /apis/{g}/{v},
// following kube-apiserver's request info rules.
func (s *Server) parseRequest(r *http.Request, gv schema.GroupVersion, parts []string) (*request, error) {
	watchPath := false
	if parts[0] == "watch" {
		watchPath = true
		parts = parts[1:]
	}
	q := &request{}
	if len(parts) >= 2 && parts[0] == "namespaces" {
		q.namespace = parts[1]
		// /namespaces/{name}/status and /finalize are namespace subresources.
		if len(parts) > 2 && parts[2] != "status" && parts[2] != "finalize" {
			parts = parts[2:]
		}
	}
	if len(parts) == 0 || len(parts) > 3 {
		return nil, notFound()
	}
	res := s.lookup(gv.WithResource(parts[0]))
	if res == nil {
		return nil, notFound()
	}
	q.res = res
	if len(parts) > 1 {
		q.name = parts[1]
	}
	if len(parts) > 2 {
		q.subresource = parts[2]
	}
	if res.info.Resource == "namespaces" && gv.Group == "" && q.namespace != "" {
		// /api/v1/namespaces/{name}[/status]: the namespace is the object.
		q.name, q.namespace = q.namespace, ""
	}
	for _, seg := range []string{q.namespace, q.name} {
		if seg == "." || seg == ".." {
			return nil, apierrors.NewBadRequest("name may not be \".\" or \"..\"")
		}
	}
	if !res.info.Namespaced && q.namespace != "" {
		return nil, notFound()
	}
	switch q.subresource {
	case "":
	case "status":
		if !res.info.Status {
			return nil, notFound()
		}
	case "finalize":
		if !isNamespaces(res) {
			return nil, notFound()
		}
	case "scale":
		if !res.info.Scale {
			return nil, notFound()
		}
	case "binding":
		if !servesBinding(res) {
			return nil, notFound()
		}
	case "eviction":
		if !servesEviction(res) {
			return nil, notFound()
		}
	case "token":
		if !s.servesTokenRequest(res) {
			return nil, notFound()
		}
	default:
		if hasSubresource(res, q.subresource) {
			break
		}
		if res.info.GVK.Group == "" && res.info.Resource == "pods" && isKubeletSubresource(q.subresource) {
			return nil, noKubelet(q.subresource)
		}
		return nil, notFound()
	}
	watchParam, _ := queryBool(r.URL.Query(), "watch")
	isWatch := watchPath || watchParam
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		switch {
		case isWatch:
			q.verb = "watch"
		case q.name == "":
			q.verb = "list"
		default:
			q.verb = "get"
		}
	case http.MethodPost:
		q.verb = "create"
	case http.MethodPut:
		q.verb = "update"
	case http.MethodPatch:
		q.verb = "patch"
	case http.MethodDelete:
		q.verb = "delete"
		if q.name == "" {
			q.verb = "deletecollection"
		}
	default:
		return nil, methodNotAllowed(r)
	}
	// Which verbs each kind of path supports.
	needsName := q.verb == "get" || q.verb == "update" || q.verb == "patch" || q.verb == "delete"
	switch {
	case needsName && q.name == "":
		return nil, methodNotAllowed(r)
	case q.subresource == "binding" || q.subresource == "token" || q.subresource == "eviction":
		if q.verb != "create" {
			return nil, methodNotAllowed(r)
		}
	case q.verb == "deletecollection" && res.info.NoDeleteCollection:
		return nil, methodNotAllowed(r)
	case q.verb == "create" && q.name != "":
		return nil, methodNotAllowed(r)
	case q.subresource == "finalize" && q.verb != "update":
		// Only PUT is served on namespaces/{name}/finalize.
		return nil, methodNotAllowed(r)
	case q.subresource != "" && q.verb != "get" && q.verb != "update" && q.verb != "patch":
		return nil, methodNotAllowed(r)
	case watchPath && q.verb != "watch":
		return nil, methodNotAllowed(r)
	case res.info.Namespaced && q.namespace == "" && q.name != "":
		// Namespaced objects are only addressed inside their namespace.
		return nil, notFound()
	case res.info.Namespaced && q.namespace == "" && (q.verb == "create" || q.verb == "deletecollection"):
		// The all-namespaces path exists (to list and watch), so kube-apiserver
		// answers other methods on it with 405.
		return nil, methodNotAllowed(r)
	}
	// A name or namespace holding a NUL byte or invalid UTF-8 can name no
	// stored object: like kube-apiserver, answer that it is not there
	// rather than that the request is malformed.
	unstorable := func(seg string) bool { return strings.IndexByte(seg, 0) >= 0 || !utf8.ValidString(seg) }
	switch {
	case q.name != "" && (unstorable(q.name) || unstorable(q.namespace)) && q.verb != "watch":
		return nil, apierrors.NewNotFound(q.gr(), q.name)
	case q.verb == "create" && unstorable(q.namespace):
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, q.namespace)
	}
	return q, nil
}

// isKubeletSubresource tells the pod subresources kube-apiserver forwards
// to the kubelet of the pod's node.
func isKubeletSubresource(sub string) bool {
	switch sub {
	case "log", "exec", "attach", "portforward", "proxy":
		return true
	}
	return false
}

// noKubelet is the 404 for a pod subresource only a kubelet can answer,
// saying why rather than only that the path is unknown.
func noKubelet(subresource string) error {
	err := notFound().(*apierrors.StatusError)
	err.ErrStatus.Message = fmt.Sprintf("pods/%s is not served: kplane runs no kubelet, so there are no containers to reach", subresource)
	return err
}

// serveHealth answers /healthz, /livez and /readyz (and their checks).
func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/readyz") {
		if _, err := s.cfg.Backend.CurrentRevision(r.Context()); err != nil {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("[-]storage failed: " + err.Error() + "\nreadyz check failed\n"))
			return
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	if _, verbose := r.URL.Query()["verbose"]; verbose {
		name := strings.TrimPrefix(strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 2)[0], "/")
		_, _ = w.Write([]byte("[+]ping ok\n[+]storage ok\n" + name + " check passed\n"))
		return
	}
	_, _ = w.Write([]byte("ok"))
}

// serveRoot lists the paths the server serves, as kube-apiserver does on /.
func (s *Server) serveRoot(w http.ResponseWriter, r *http.Request) {
	paths := []string{"/api", "/api/v1", "/apis", "/healthz", "/livez", "/metrics", "/readyz", "/version"}
	for _, gv := range s.served.Load().groups {
		if gv.Group != "" {
			paths = append(paths, "/apis/"+gv.Group, "/apis/"+gv.String())
		}
	}
	paths = append(paths, "/openapi/v2", "/openapi/v3")
	writeJSON(w, http.StatusOK, map[string][]string{"paths": paths})
}
