package apiserver

import (
	"encoding/json"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/yaml"

	"fmt"

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

// format is a response encoding chosen from the Accept header.
type format int

const (
	formatJSON format = iota
	formatYAML
	formatTable
	// formatMetadata is meta.k8s.io/v1 PartialObjectMetadata(List), what
	// metadata-only clients (controller-runtime's, client-go's) ask for.
	formatMetadata
)

// mediaRange is one entry of an Accept header.
type mediaRange struct {
	typ    string // "application/json"
	params map[string]string
}

// parseAccept splits an Accept header into media ranges in the client's
// order of preference (q=0 entries dropped; equal q keeps header order).
func parseAccept(header string) []mediaRange {
	var out []mediaRange
	var qs []float64
	for part := range strings.SplitSeq(header, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		typ, params, err := mime.ParseMediaType(part)
		if err != nil {
			continue
		}
		q := 1.0
		if v, ok := params["q"]; ok {
			q = parseQ(v)
		}
		if q <= 0 {
			continue
		}
		// Stable insertion by descending q.
		i := len(out)
		for i > 0 && qs[i-1] < q {
			i--
		}
		out = append(out[:i], append([]mediaRange{{typ: typ, params: params}}, out[i:]...)...)
		qs = append(qs[:i], append([]float64{q}, qs[i:]...)...)
	}
	return out
}

func parseQ(v string) float64 {
	// q is 0..1 with up to three decimals; anything unparsable counts as 1.
	var whole, frac float64
	var scale = 1.0
	seenDot := false
	for _, c := range v {
		switch {
		case c == '.' && !seenDot:
			seenDot = true
		case c >= '0' && c <= '9' && !seenDot:
			whole = whole*10 + float64(c-'0')
		case c >= '0' && c <= '9':
			scale /= 10
			frac += float64(c-'0') * scale
		default:
			return 1
		}
	}
	return whole + frac
}

// negotiate picks the response format for an object request.
func (s *Server) negotiate(r *http.Request) (format, error) {
	accept := r.Header.Get("Accept")
	if strings.TrimSpace(accept) == "" {
		return formatJSON, nil
	}
	for _, m := range parseAccept(accept) {
		as := m.params["as"]
		switch m.typ {
		case "application/json", "*/*", "application/*":
			switch {
			case as == "":
				return formatJSON, nil
			case as == "Table" && m.params["g"] == "meta.k8s.io" && (m.params["v"] == "v1" || m.params["v"] == "v1beta1"):
				return formatTable, nil
			case (as == "PartialObjectMetadata" || as == "PartialObjectMetadataList") && m.params["g"] == "meta.k8s.io" && m.params["v"] == "v1":
				return formatMetadata, nil
			}
		case "application/yaml":
			if as == "" {
				return formatYAML, nil
			}
		}
	}
	return 0, notAcceptable()
}

// toMetadata converts an object or a list to PartialObjectMetadata(List).
func toMetadata(obj runtime.Object) (runtime.Object, error) {
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
			TypeMeta: metav1.TypeMeta{APIVersion: metav1.SchemeGroupVersion.String(), Kind: "PartialObjectMetadataList"},
			ListMeta: metav1.ListMeta{ResourceVersion: la.GetResourceVersion(), Continue: la.GetContinue(), RemainingItemCount: la.GetRemainingItemCount()},
			Items:    make([]metav1.PartialObjectMetadata, 0, len(items)),
		}
		for _, item := range items {
			m, err := meta.Accessor(item)
			if err != nil {
				return nil, err
			}
			list.Items = append(list.Items, metav1.PartialObjectMetadata{ObjectMeta: *metaCopy(m)})
		}
		return list, nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: metav1.SchemeGroupVersion.String(), Kind: "PartialObjectMetadata"},
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

// writeObject writes obj in the negotiated format.
func (s *Server) writeObject(w http.ResponseWriter, r *http.Request, code int, f format, obj runtime.Object) {
	switch f {
	case formatTable:
		table, err := s.toTable(obj, tableOptions(r))
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		table.APIVersion, table.Kind = metav1.SchemeGroupVersion.String(), "Table"
		writeJSON(w, code, table)
	case formatMetadata:
		out, err := toMetadata(obj)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, code, out)
	case formatYAML:
		data, err := marshalJSON(obj)
		if err == nil {
			data, err = yaml.JSONToYAML(data)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		w.Header().Set("Content-Type", "application/yaml")
		w.WriteHeader(code)
		_, _ = w.Write(data)
	default:
		writeJSON(w, code, obj)
	}
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
