package apiserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/yaml"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kplane/kplane/internal/jsonvalue"
	"github.com/kplane/kplane/pkg/apiserver/tables"
	"github.com/kplane/kplane/pkg/registry"
)

// mediaType is the encoding of a response body.
type mediaType int

const (
	mediaJSON mediaType = iota
	mediaYAML
	mediaProtobuf
)

// servedMedia are the encodings the server writes, in kube-apiserver's
// order of preference (the order its serializers are listed in).
var servedMedia = [...]struct {
	typ, subtype string
	media        mediaType
	// stream is set for the encodings that have a watch stream framing.
	stream bool
}{
	{"application", "json", mediaJSON, true},
	{"application", "yaml", mediaYAML, false},
	{"application", "vnd.kubernetes.protobuf", mediaProtobuf, true},
}

// contentType is the Content-Type kube-apiserver writes for m.
func (m mediaType) contentType() string {
	switch m {
	case mediaYAML:
		return "application/yaml"
	case mediaProtobuf:
		return protobufType
	}
	return "application/json"
}

// view is what a response holds: the object itself, or one of the
// transformations kube-apiserver offers through the as, g and v
// parameters of a media type.
type view int

const (
	viewObject view = iota
	viewTable
	// viewMetadata is meta.k8s.io/v1 PartialObjectMetadata(List), what
	// metadata-only clients (controller-runtime's, client-go's) ask for.
	viewMetadata
)

// format is a response's encoding and view, chosen from the Accept header.
type format struct {
	media mediaType
	view  view
	// version is the meta.k8s.io version of a Table or metadata view,
	// v1 or v1beta1.
	version string
}

// mediaRange is one clause of an Accept header.
type mediaRange struct {
	typ    string // "application/json"
	params map[string]string
}

// parseAccept splits an Accept header into media ranges in the order
// kube-apiserver considers them: by descending q, a range with a wildcard
// after one without. It parses as kube-apiserver's parser (goautoneg)
// does: "*" alone is "*/*", parameters are split on ";" and "=" without
// unquoting, a q that does not parse is 0, and q=0 ranges are kept (last).
func parseAccept(header string) []mediaRange {
	type clause struct {
		mediaRange
		typ, subtype string
		q            float64
	}
	var clauses []clause
	for part := range strings.SplitSeq(header, ",") {
		fields := strings.Split(strings.Trim(part, " "), ";")
		typ, subtype, found := strings.Cut(fields[0], "/")
		typ = strings.Trim(typ, " ")
		switch {
		case !found && typ == "*":
			subtype = "*"
		case found && !strings.Contains(subtype, "/"):
			subtype = strings.Trim(subtype, " ")
		default:
			continue
		}
		c := clause{typ: typ, subtype: subtype, q: 1}
		c.params = map[string]string{}
		for _, p := range fields[1:] {
			k, v, ok := strings.Cut(p, "=")
			if !ok {
				continue
			}
			k = strings.Trim(k, " ")
			if k == "q" {
				c.q, _ = strconv.ParseFloat(v, 32)
				continue
			}
			c.params[k] = strings.Trim(v, " ")
		}
		c.mediaRange.typ = typ + "/" + subtype
		clauses = append(clauses, c)
	}
	// The same (not strictly weak) order and the same sort as goautoneg's,
	// so that ties fall as they do in kube-apiserver.
	sort.Sort(acceptOrder{len(clauses), func(i, j int) bool {
		a, b := clauses[i], clauses[j]
		return a.q > b.q || a.typ != "*" && b.typ == "*" || a.subtype != "*" && b.subtype == "*"
	}, func(i, j int) { clauses[i], clauses[j] = clauses[j], clauses[i] }})
	out := make([]mediaRange, len(clauses))
	for i, c := range clauses {
		out[i] = c.mediaRange
	}
	return out
}

// acceptOrder adapts functions to sort.Interface.
type acceptOrder struct {
	n    int
	less func(i, j int) bool
	swap func(i, j int)
}

func (o acceptOrder) Len() int           { return o.n }
func (o acceptOrder) Less(i, j int) bool { return o.less(i, j) }
func (o acceptOrder) Swap(i, j int)      { o.swap(i, j) }

// restriction is what an endpoint serves besides its objects' own
// encodings, kube-apiserver's EndpointRestrictions.
type restriction int

const (
	// restrictNone is a resource endpoint: every encoding, Tables (JSON
	// and YAML only) and PartialObjectMetadata(List) in every encoding.
	restrictNone restriction = iota
	// restrictCustom is a custom resource's endpoint: no protobuf for the
	// objects themselves, which have no protobuf schema, but the
	// transformations as a built-in's.
	restrictCustom
	// restrictError is for Status answers: every encoding, no
	// transformation.
	restrictError
)

// negotiateMedia returns the first format of the Accept header the
// restriction allows, as kube-apiserver's NegotiateMediaTypeOptions does:
// clauses in parseAccept's order, each tried against the served encodings
// it matches (a wildcard matches them all, JSON first). An empty header is
// JSON.
func negotiateMedia(accept string, rs restriction) (format, bool) {
	if accept == "" {
		return format{}, true
	}
	for _, m := range parseAccept(accept) {
		typ, subtype, _ := strings.Cut(m.typ, "/")
		for _, sm := range servedMedia {
			if !(typ == sm.typ && (subtype == sm.subtype || subtype == "*") || typ == "*" && subtype == "*") {
				continue
			}
			if f, ok := acceptParams(m.params, sm.media, sm.stream, rs); ok {
				return f, true
			}
		}
	}
	return format{}, false
}

// acceptParams reports whether a clause's parameters can be served in
// media, as kube-apiserver's acceptMediaTypeOptions and the endpoint
// restrictions decide, and the view they ask for.
func acceptParams(params map[string]string, media mediaType, stream bool, rs restriction) (format, bool) {
	f := format{media: media}
	as, hasAs := params["as"]
	g, hasG := params["g"]
	v, hasV := params["v"]
	if s := params["stream"]; s != "" && (!stream || s != "watch") {
		return f, false
	}
	if sv := params["sv"]; sv != "" && (rs == restrictError || sv != metav1.SchemeGroupVersion.Version) {
		return f, false
	}
	if !hasAs && !hasG && !hasV {
		return f, rs != restrictCustom || media != mediaProtobuf
	}
	if rs == restrictError || g != metav1.GroupName || v != "v1" && v != "v1beta1" {
		return f, false
	}
	f.version = v
	switch as {
	case "Table":
		f.view = viewTable
		return f, media != mediaProtobuf
	case "PartialObjectMetadata", "PartialObjectMetadataList":
		f.view = viewMetadata
		return f, true
	}
	return f, false
}

// negotiate picks the response format of a request on res.
func (s *Server) negotiate(r *http.Request, res *resource) (format, error) {
	rs := restrictNone
	if res != nil && res.custom != nil {
		rs = restrictCustom
	}
	f, ok := negotiateMedia(r.Header.Get("Accept"), rs)
	if !ok {
		return f, notAcceptable()
	}
	return f, nil
}

// toMetadata converts an object or a list to PartialObjectMetadata(List)
// of meta.k8s.io/version.
func toMetadata(obj runtime.Object, version string) (runtime.Object, error) {
	apiVersion := metav1.GroupName + "/" + version
	if meta.IsListType(obj) {
		items, err := meta.ExtractList(obj)
		if err != nil {
			return nil, err
		}
		la, err := meta.ListAccessor(obj)
		if err != nil {
			return nil, err
		}
		list := &metav1.PartialObjectMetadataList{
			TypeMeta: metav1.TypeMeta{APIVersion: apiVersion, Kind: "PartialObjectMetadataList"},
			ListMeta: metav1.ListMeta{ResourceVersion: la.GetResourceVersion(), Continue: la.GetContinue(), RemainingItemCount: la.GetRemainingItemCount()},
			Items:    make([]metav1.PartialObjectMetadata, 0, len(items)),
		}
		for _, item := range items {
			m, err := meta.Accessor(item)
			if err != nil {
				return nil, err
			}
			list.Items = append(list.Items, metav1.PartialObjectMetadata{
				TypeMeta:   metav1.TypeMeta{APIVersion: apiVersion, Kind: "PartialObjectMetadata"},
				ObjectMeta: *metaCopy(m),
			})
		}
		return list, nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiVersion, Kind: "PartialObjectMetadata"},
		ObjectMeta: *metaCopy(m),
	}, nil
}

// metaCopy deep-copies an object's metadata (shared watch objects are read only).
func metaCopy(m metav1.Object) *metav1.ObjectMeta {
	if om, ok := m.(*metav1.ObjectMeta); ok {
		return om.DeepCopy()
	}
	return &metav1.ObjectMeta{
		Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUID(), ResourceVersion: m.GetResourceVersion(),
		Generation: m.GetGeneration(), CreationTimestamp: m.GetCreationTimestamp(), DeletionTimestamp: m.GetDeletionTimestamp(),
		DeletionGracePeriodSeconds: m.GetDeletionGracePeriodSeconds(), Labels: m.GetLabels(), Annotations: m.GetAnnotations(),
		OwnerReferences: m.GetOwnerReferences(), Finalizers: m.GetFinalizers(), GenerateName: m.GetGenerateName(),
	}
}

// tableOptions reads the Table query parameters (includeObject).
func tableOptions(r *http.Request) metav1.TableOptions {
	return metav1.TableOptions{IncludeObject: metav1.IncludeObjectPolicy(r.URL.Query().Get("includeObject"))}
}

// marshalJSON encodes v as json.Marshal does; custom resources, which are
// JSON values already, without reflection.
func marshalJSON(v any) ([]byte, error) {
	switch t := v.(type) {
	case *unstructured.Unstructured:
		return jsonvalue.Append(nil, t.Object)
	case *unstructured.UnstructuredList:
		m := make(map[string]any, len(t.Object)+1)
		for k, v := range t.Object {
			m[k] = v
		}
		items := make([]any, len(t.Items))
		for i := range t.Items {
			items[i] = t.Items[i].Object
		}
		m["items"] = items
		return jsonvalue.Append(make([]byte, 0, 512*len(items)+256), m)
	}
	return json.Marshal(v)
}

// writeJSON writes v as a JSON response.
func writeJSON(w http.ResponseWriter, code int, v any) {
	data, err := marshalJSON(v)
	if err != nil {
		http.Error(w, "encode response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(data)
	_, _ = w.Write([]byte("\n"))
}

// writeObject writes obj in the negotiated format. A Status is written as
// it is whatever the view, as kube-apiserver does.
func (s *Server) writeObject(w http.ResponseWriter, r *http.Request, code int, f format, obj runtime.Object) {
	if _, ok := obj.(*metav1.Status); !ok {
		switch f.view {
		case viewTable:
			table, err := s.toTable(obj, tableOptions(r))
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			table.APIVersion, table.Kind = metav1.GroupName+"/"+f.version, "Table"
			obj = table
		case viewMetadata:
			out, err := toMetadata(obj, f.version)
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			obj = out
		}
	}
	data, err := encodeAs(f.media, obj)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeEncoded(w, code, f.media, data)
}

// writeEncoded writes data, encoded in media by encodeAs, as the body.
func writeEncoded(w http.ResponseWriter, code int, media mediaType, data []byte) {
	w.Header().Set("Content-Type", media.contentType())
	w.WriteHeader(code)
	_, _ = w.Write(data)
	if media == mediaJSON {
		_, _ = w.Write([]byte("\n"))
	}
}

// encodeAs encodes obj, whose apiVersion and kind are set, in media (JSON
// without its final newline).
func encodeAs(media mediaType, obj runtime.Object) ([]byte, error) {
	switch media {
	case mediaProtobuf:
		return encodeProtobuf(obj, obj.GetObjectKind().GroupVersionKind())
	case mediaYAML:
		data, err := marshalJSON(obj)
		if err != nil {
			return nil, err
		}
		return yaml.JSONToYAML(data)
	}
	return marshalJSON(obj)
}

// addWarnings sets one Warning header per message, in the format of
// kube-apiserver (code 299, agent "-").
func addWarnings(w http.ResponseWriter, warnings []string) {
	var rec *warningRecorder
	for u := w; u != nil; {
		if tw, ok := u.(*trackingWriter); ok {
			rec = &tw.warned
			break
		}
		uw, ok := u.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			break
		}
		u = uw.Unwrap()
	}
	for _, msg := range warnings {
		if rec == nil {
			w.Header().Add("Warning", warningHeader(msg))
			continue
		}
		rec.add(w.Header(), msg)
	}
}

// The limits of a request's warnings, as kube-apiserver's: once their
// text passes warningTotalRunes, every warning is cut to warningItemRunes,
// and none is added once that total is passed again.
const (
	warningTotalRunes = 4 * 1024
	warningItemRunes  = 256
)

// warningRecorder is the state of a request's Warning headers: each
// message once, within kube-apiserver's limits.
type warningRecorder struct {
	seen       map[string]bool
	ordered    []string
	written    int
	truncating bool
}

func warningHeader(msg string) string { return `299 - "` + escapeWarning(msg) + `"` }

func (r *warningRecorder) add(h http.Header, msg string) {
	if msg == "" || r.written >= warningTotalRunes && r.truncating || r.seen[msg] {
		return
	}
	if r.seen == nil {
		r.seen = map[string]bool{}
	}
	r.seen[msg] = true
	r.ordered = append(r.ordered, msg)
	cut := func(m string) (string, int) {
		n := utf8.RuneCountInString(m)
		if n > warningItemRunes {
			return string([]rune(m)[:warningItemRunes]), warningItemRunes
		}
		return m, n
	}
	text, n := msg, utf8.RuneCountInString(msg)
	if r.truncating {
		text, n = cut(msg)
	}
	if r.written+n <= warningTotalRunes || r.truncating {
		r.written += n
		h.Add("Warning", warningHeader(text))
		return
	}
	// Too much: start again with every warning cut.
	r.truncating = true
	r.written = 0
	h.Del("Warning")
	for _, m := range r.ordered {
		text, n := cut(m)
		r.written += n
		h.Add("Warning", warningHeader(text))
	}
}

func escapeWarning(msg string) string {
	var b strings.Builder
	for _, c := range msg {
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteRune(c)
		case c < 0x20 || c == 0x7f:
			b.WriteByte(' ')
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// toTable converts obj to a Table: custom resources with their CRD's
// printer columns, everything else with kplane's printers.
func (s *Server) toTable(obj runtime.Object, opts metav1.TableOptions) (*metav1.Table, error) {
	switch obj.(type) {
	case *unstructured.Unstructured, *unstructured.UnstructuredList:
		if res := s.served.Load().byGVK[obj.GetObjectKind().GroupVersionKind()]; res != nil {
			if tc, ok := res.strategy.(registry.TableConvertor); ok {
				if errs := metav1validation.ValidateTableOptions(&opts); len(errs) > 0 {
					return nil, apierrors.NewBadRequest(fmt.Sprintf("Unable to convert to Table as requested: %v", errs[0].Error()))
				}
				return tc.ConvertToTable(obj, s.clock.Now(), opts)
			}
		}
	}
	return tables.ConvertWith(obj, s.clock.Now(), opts)
}
