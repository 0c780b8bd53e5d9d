package openapi

import (
	"sort"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Definition names of the meta types every document refers to.
const (
	defStatus        = "io.k8s.apimachinery.pkg.apis.meta.v1.Status"
	defDeleteOptions = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"
	defWatchEvent    = "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent"
	defPatch         = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
)

// Media types the operations declare.
const (
	mediaJSON      = "application/json"
	mediaJSONWatch = "application/json;stream=watch"
)

// patchTypes are the patch bodies kplane accepts (no server-side apply).
var patchTypes = []string{
	"application/json-patch+json",
	"application/merge-patch+json",
	"application/strategic-merge-patch+json",
}

// param is one operation or path parameter.
type param struct {
	name, in, typ, desc string
	required            bool
}

// response is the answer to one status code.
type response struct {
	code, desc string
	// def names the body's definition; empty for none.
	def string
}

// operation is one HTTP method on one path, in a form neutral between the
// two OpenAPI dialects.
type operation struct {
	method, id, desc, action, tag string
	gvk                           schema.GroupVersionKind
	params                        []param
	// body names the request body's definition; empty for none.
	body         string
	bodyRequired bool
	consumes     []string
	produces     []string
	responses    []response
}

// pathItem is a path, the parameters all its operations share, and its
// operations in the order they are declared.
type pathItem struct {
	path   string
	params []param
	ops    []*operation
}

// Query parameters, with descriptions of what kplane does with them.
var (
	pPretty               = param{name: "pretty", in: "query", typ: "string", desc: "If 'true', then the output is pretty printed."}
	pWatch                = param{name: "watch", in: "query", typ: "boolean", desc: "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications."}
	pAllowWatchBookmarks  = param{name: "allowWatchBookmarks", in: "query", typ: "boolean", desc: "Request watch events of type BOOKMARK, sent at the server's discretion."}
	pContinue             = param{name: "continue", in: "query", typ: "string", desc: "The continue token of a previous paginated list call with the same parameters."}
	pFieldSelector        = param{name: "fieldSelector", in: "query", typ: "string", desc: "A selector to restrict the list of returned objects by their fields. Defaults to everything."}
	pLabelSelector        = param{name: "labelSelector", in: "query", typ: "string", desc: "A selector to restrict the list of returned objects by their labels. Defaults to everything."}
	pLimit                = param{name: "limit", in: "query", typ: "integer", desc: "The maximum number of objects a list call returns; a continue token in the list metadata gives the rest."}
	pResourceVersion      = param{name: "resourceVersion", in: "query", typ: "string", desc: "Constrains the resource version a request is served from."}
	pResourceVersionMatch = param{name: "resourceVersionMatch", in: "query", typ: "string", desc: "How resourceVersion applies to a list call: Exact or NotOlderThan."}
	pSendInitialEvents    = param{name: "sendInitialEvents", in: "query", typ: "boolean", desc: "With watch=true and resourceVersionMatch=NotOlderThan, stream the current state as ADDED events, then a bookmark annotated k8s.io/initial-events-end."}
	pTimeoutSeconds       = param{name: "timeoutSeconds", in: "query", typ: "integer", desc: "Timeout for the list or watch call."}
	pDryRun               = param{name: "dryRun", in: "query", typ: "string", desc: "When All, the request is validated and answered but nothing is stored."}
	pFieldManager         = param{name: "fieldManager", in: "query", typ: "string", desc: "A name for the actor making the change."}
	pFieldValidation      = param{name: "fieldValidation", in: "query", typ: "string", desc: "How to treat unknown or duplicate fields in the request body: Ignore, Warn (the default) or Strict."}
	pForce                = param{name: "force", in: "query", typ: "boolean", desc: "Re-acquire conflicting fields on apply requests; must be unset otherwise."}
	pGracePeriodSeconds   = param{name: "gracePeriodSeconds", in: "query", typ: "integer", desc: "The duration in seconds before the object should be deleted; zero deletes immediately."}
	pOrphanDependents     = param{name: "orphanDependents", in: "query", typ: "boolean", desc: "Deprecated: use propagationPolicy. Whether dependents are orphaned."}
	pPropagationPolicy    = param{name: "propagationPolicy", in: "query", typ: "string", desc: "How dependents are garbage collected: Orphan, Background or Foreground."}
)

var (
	listParams   = []param{pAllowWatchBookmarks, pContinue, pFieldSelector, pLabelSelector, pLimit, pResourceVersion, pResourceVersionMatch, pSendInitialEvents, pTimeoutSeconds, pWatch}
	writeParams  = []param{pDryRun, pFieldManager, pFieldValidation}
	patchParams  = []param{pDryRun, pFieldManager, pFieldValidation, pForce}
	deleteParams = []param{pDryRun, pGracePeriodSeconds, pOrphanDependents, pPropagationPolicy}
	// deleteCollectionParams are the delete options plus the list options
	// that pick the objects to delete.
	deleteCollectionParams = []param{pContinue, pDryRun, pFieldSelector, pGracePeriodSeconds, pLabelSelector, pLimit, pOrphanDependents, pPropagationPolicy, pResourceVersion, pResourceVersionMatch, pSendInitialEvents, pTimeoutSeconds}
)

func pathParam(name, desc string) param {
	return param{name: name, in: "path", typ: "string", desc: desc, required: true}
}

// gvPrefix is the URL prefix of a group version: /api/v1 for the core
// group, /apis/{group}/{version} otherwise.
func gvPrefix(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "/api/" + gv.Version
	}
	return "/apis/" + gv.Group + "/" + gv.Version
}

// gvKey is the key of a group version in the OpenAPI v3 index.
func gvKey(gv schema.GroupVersion) string { return strings.TrimPrefix(gvPrefix(gv), "/") }

// groupWords splits a group into the words Kubernetes builds operation IDs
// and tags from: the core group is "core", a ".k8s.io" suffix is dropped and
// the remaining dot-separated words are kept ("rbac.authorization.k8s.io"
// gives rbac, authorization).
func groupWords(group string) []string {
	if group == "" {
		return []string{"core"}
	}
	group = strings.TrimSuffix(group, ".k8s.io")
	return strings.FieldsFunc(group, func(r rune) bool { return r == '.' || r == '-' })
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	r := []rune(s)
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}

// opIDPart is the group-version part of operation IDs: CoreV1, AppsV1,
// CoordinationV1.
func opIDPart(gv schema.GroupVersion) string {
	var b strings.Builder
	for _, w := range groupWords(gv.Group) {
		b.WriteString(upperFirst(w))
	}
	b.WriteString(upperFirst(gv.Version))
	return b.String()
}

// tag is the operation tag of a group version: core_v1, apps_v1.
func tag(gv schema.GroupVersion) string {
	words := groupWords(gv.Group)
	for i := 1; i < len(words); i++ {
		words[i] = upperFirst(words[i])
	}
	return strings.Join(words, "") + "_" + gv.Version
}

// kindPaths returns the paths of one resource: collection and item, the
// deprecated watch paths, the all-namespaces list of a namespaced resource,
// and each subresource. objDef and listDef name the kind's definitions;
// subDefs maps each subresource to the definition its body uses and
// subGVKs to the kind it is declared as.
func kindPaths(k Kind, objDef, listDef string, subDefs map[string]string, subGVKs map[string]schema.GroupVersionKind) []*pathItem {
	gv := k.GVK.GroupVersion()
	prefix := gvPrefix(gv)
	idPart := opIDPart(gv)
	kind := k.GVK.Kind
	tg := tag(gv)
	nameParam := pathParam("name", "name of the "+kind)
	nsParam := pathParam("namespace", "object name and auth scope, such as for teams and projects")

	scope := ""  // inserted between group version and kind in operation IDs
	nsPath := "" // inserted between prefix and resource in paths
	common := []param{pPretty}
	if k.Namespaced {
		scope = "Namespaced"
		nsPath = "/namespaces/{namespace}"
		common = []param{nsParam, pPretty}
	}
	itemCommon := append([]param{nameParam}, common...)

	newOp := func(method, verb, action, suffix, desc string, gvk schema.GroupVersionKind) *operation {
		return &operation{
			method:   method,
			id:       verb + idPart + suffix,
			desc:     desc,
			action:   action,
			tag:      tg,
			gvk:      gvk,
			produces: []string{mediaJSON},
		}
	}
	ok := func(def string) []response { return []response{{code: "200", desc: "OK", def: def}} }
	written := func(def string, codes ...string) []response {
		out := ok(def)
		for _, c := range codes {
			switch c {
			case "201":
				out = append(out, response{code: c, desc: "Created", def: def})
			case "202":
				out = append(out, response{code: c, desc: "Accepted", def: def})
			}
		}
		return out
	}

	// Collection: list, create, delete collection.
	list := newOp("get", "list", "list", scope+kind, "list or watch objects of kind "+kind, k.GVK)
	list.params = listParams
	list.produces = []string{mediaJSON, mediaJSONWatch}
	list.responses = ok(listDef)

	create := newOp("post", "create", "post", scope+kind, "create a "+kind, k.GVK)
	create.params = writeParams
	create.body, create.bodyRequired = objDef, true
	create.consumes = []string{mediaJSON}
	create.responses = written(objDef, "201", "202")

	delColl := newOp("delete", "delete", "deletecollection", "Collection"+scope+kind, "delete collection of "+kind, k.GVK)
	delColl.params = deleteCollectionParams
	delColl.body = defDeleteOptions
	delColl.consumes = []string{mediaJSON}
	delColl.responses = ok(defStatus)

	collection := &pathItem{path: prefix + nsPath + "/" + k.Resource, params: common, ops: []*operation{delColl, list, create}}
	if k.CreateOnly {
		return []*pathItem{{path: collection.path, params: common, ops: []*operation{create}}}
	}

	// Item: read, replace, patch, delete.
	read := newOp("get", "read", "get", scope+kind, "read the specified "+kind, k.GVK)
	read.responses = ok(objDef)

	replace := newOp("put", "replace", "put", scope+kind, "replace the specified "+kind, k.GVK)
	replace.params = writeParams
	replace.body, replace.bodyRequired = objDef, true
	replace.consumes = []string{mediaJSON}
	replace.responses = written(objDef, "201")

	patch := newOp("patch", "patch", "patch", scope+kind, "partially update the specified "+kind, k.GVK)
	patch.params = patchParams
	patch.body, patch.bodyRequired = defPatch, true
	patch.consumes = patchTypes
	patch.responses = written(objDef, "201")

	del := newOp("delete", "delete", "delete", scope+kind, "delete a "+kind, k.GVK)
	del.params = deleteParams
	del.body = defDeleteOptions
	del.consumes = []string{mediaJSON}
	del.responses = written(defStatus, "202")

	item := &pathItem{path: collection.path + "/{name}", params: itemCommon, ops: []*operation{del, read, patch, replace}}

	// Deprecated watch paths, still used by older clients.
	watchOp := func(suffix, desc string) *operation {
		action := "watch"
		if strings.Contains(suffix, "List") {
			action = "watchlist"
		}
		op := newOp("get", "watch", action, suffix, desc, k.GVK)
		op.produces = []string{mediaJSON, mediaJSONWatch}
		op.responses = ok(defWatchEvent)
		return op
	}
	watchItem := &pathItem{
		path:   prefix + "/watch" + nsPath + "/" + k.Resource + "/{name}",
		params: append(append([]param{nameParam}, common...), listParams...),
		ops:    []*operation{watchOp(scope+kind, "watch changes to an object of kind "+kind+". deprecated: use the 'watch' parameter with a list operation instead, filtered to a single item with the 'fieldSelector' parameter.")},
	}
	watchList := &pathItem{
		path:   prefix + "/watch" + nsPath + "/" + k.Resource,
		params: append(append([]param{}, common...), listParams...),
		ops:    []*operation{watchOp(scope+kind+"List", "watch individual changes to a list of "+kind+". deprecated: use the 'watch' parameter with a list operation instead.")},
	}
	items := []*pathItem{collection, item, watchItem, watchList}

	if k.Namespaced {
		all := newOp("get", "list", "list", kind+"ForAllNamespaces", "list or watch objects of kind "+kind, k.GVK)
		all.params = nil
		all.produces = []string{mediaJSON, mediaJSONWatch}
		all.responses = ok(listDef)
		items = append(items,
			&pathItem{path: prefix + "/" + k.Resource, params: append([]param{pPretty}, listParams...), ops: []*operation{all}},
			&pathItem{
				path:   prefix + "/watch/" + k.Resource,
				params: append([]param{pPretty}, listParams...),
				ops:    []*operation{watchOp(kind+"ListForAllNamespaces", "watch individual changes to a list of "+kind+". deprecated: use the 'watch' parameter with a list operation instead.")},
			})
	}

	for _, sub := range k.Subresources {
		def := subDefs[sub]
		gvk := subGVKs[sub]
		suffix := scope + kind + upperFirst(sub)
		what := sub + " of the specified " + kind
		sread := newOp("get", "read", "get", suffix, "read "+what, gvk)
		sread.responses = ok(def)
		sreplace := newOp("put", "replace", "put", suffix, "replace "+what, gvk)
		sreplace.params = writeParams
		sreplace.body, sreplace.bodyRequired = def, true
		sreplace.consumes = []string{mediaJSON}
		sreplace.responses = written(def, "201")
		spatch := newOp("patch", "patch", "patch", suffix, "partially update "+what, gvk)
		spatch.params = patchParams
		spatch.body, spatch.bodyRequired = defPatch, true
		spatch.consumes = patchTypes
		spatch.responses = written(def, "201")
		items = append(items, &pathItem{path: item.path + "/" + sub, params: itemCommon, ops: []*operation{sread, spatch, sreplace}})
	}
	return items
}

// sortedParams returns ps ordered by location then name, so documents do
// not depend on declaration order.
func sortedParams(ps []param) []param {
	out := append([]param(nil), ps...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].in != out[j].in {
			return out[i].in < out[j].in
		}
		return out[i].name < out[j].name
	})
	return out
}

func gvkExt(gvk schema.GroupVersionKind) map[string]any {
	return map[string]any{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind}
}

// renderParam returns a parameter in dialect d.
func renderParam(p param, d dialect) map[string]any {
	out := map[string]any{"name": p.name, "in": p.in}
	if p.desc != "" {
		out["description"] = p.desc
	}
	if p.required {
		out["required"] = true
	}
	if d == openAPI3 {
		out["schema"] = map[string]any{"type": p.typ, "uniqueItems": true}
	} else {
		out["type"] = p.typ
		out["uniqueItems"] = true
	}
	return out
}

func renderParams(ps []param, d dialect) []any {
	out := make([]any, 0, len(ps))
	for _, p := range sortedParams(ps) {
		out = append(out, renderParam(p, d))
	}
	return out
}

// render returns the operation in dialect d.
func (o *operation) render(d dialect) map[string]any {
	out := map[string]any{
		"description": o.desc,
		"operationId": o.id,
		"tags":        []string{o.tag},
		extAction:     o.action,
		extGVK:        gvkExt(o.gvk),
	}
	params := renderParams(o.params, d)
	refTo := func(def string) map[string]any { return map[string]any{"$ref": d.refPrefix() + def} }
	responses := make(map[string]any, len(o.responses)+1)
	if d == openAPI3 {
		if o.body != "" {
			content := make(map[string]any, len(o.consumes))
			for _, c := range o.consumes {
				content[c] = map[string]any{"schema": refTo(o.body)}
			}
			rb := map[string]any{"content": content}
			if o.bodyRequired {
				rb["required"] = true
			}
			out["requestBody"] = rb
		}
		for _, r := range o.responses {
			resp := map[string]any{"description": r.desc}
			if r.def != "" {
				content := make(map[string]any, len(o.produces))
				for _, p := range o.produces {
					content[p] = map[string]any{"schema": refTo(r.def)}
				}
				resp["content"] = content
			}
			responses[r.code] = resp
		}
	} else {
		if o.body != "" {
			body := map[string]any{"name": "body", "in": "body", "schema": refTo(o.body)}
			if o.bodyRequired {
				body["required"] = true
			}
			params = append([]any{body}, params...)
		}
		consumes := o.consumes
		if len(consumes) == 0 {
			consumes = []string{"*/*"}
		}
		out["consumes"] = consumes
		out["produces"] = o.produces
		out["schemes"] = []string{"https"}
		for _, r := range o.responses {
			resp := map[string]any{"description": r.desc}
			if r.def != "" {
				resp["schema"] = refTo(r.def)
			}
			responses[r.code] = resp
		}
		responses["401"] = map[string]any{"description": "Unauthorized"}
	}
	if len(params) > 0 {
		out["parameters"] = params
	}
	out["responses"] = responses
	return out
}

// render returns the path item in dialect d.
func (p *pathItem) render(d dialect) map[string]any {
	out := make(map[string]any, len(p.ops)+1)
	if len(p.params) > 0 {
		out["parameters"] = renderParams(p.params, d)
	}
	for _, op := range p.ops {
		out[op.method] = op.render(d)
	}
	return out
}
