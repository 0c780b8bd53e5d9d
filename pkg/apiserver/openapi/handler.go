package openapi

import (
	"bytes"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Media types of the served documents. kubectl and client-go ask for the
// v2 document only as protobuf (the "@" spelling); the "." spelling is the
// one Kubernetes answers with and also accepts.
const (
	mediaV2Proto           = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
	mediaV2ProtoDeprecated = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
	mediaV3Proto           = "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"
	mediaV3ProtoDeprecated = "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"
)

// offer is one representation of a document a client may choose.
type offer struct {
	// mediaType is matched against the Accept header.
	mediaType string
	// contentType is sent back.
	contentType string
	doc         *document
}

// ServeHTTP serves GET and HEAD of /openapi/v2, /openapi/v3 and
// /openapi/v3/{api/v1 | apis/<group>/<version>}; the request path must
// begin with /openapi/. The representation is chosen from the Accept header
// (JSON, or the gnostic protobuf encoding), 406 Not Acceptable when none
// fits. Every response carries an ETag, and If-None-Match is answered with
// 304. A v3 request whose hash query names an outdated document is
// redirected (301) to the current one; one naming the current document is
// marked immutable for a year, as Kubernetes does.
func (d *Docs) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	p := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case p == "/openapi/v2":
		d.negotiate(w, r, []offer{
			{mediaType: mediaJSON, contentType: mediaJSON, doc: &d.v2JSON},
			{mediaType: mediaV2ProtoDeprecated, contentType: mediaV2Proto, doc: &d.v2Proto},
			{mediaType: mediaV2Proto, contentType: mediaV2Proto, doc: &d.v2Proto},
		})
	case p == "/openapi/v3":
		d.serve(w, r, mediaJSON, &d.v3Index)
	case strings.HasPrefix(p, "/openapi/v3/"):
		key := strings.TrimPrefix(p, "/openapi/v3/")
		doc, ok := d.v3[key]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if hash := r.URL.Query().Get("hash"); hash != "" {
			if hash != doc.json.etag {
				http.Redirect(w, r, v3URL(key, doc.json.etag), http.StatusMovedPermanently)
				return
			}
			w.Header().Set("Cache-Control", "public, immutable")
			w.Header().Set("Expires", d.clock.Now().AddDate(1, 0, 0).UTC().Format(http.TimeFormat))
		}
		d.negotiate(w, r, []offer{
			{mediaType: mediaJSON, contentType: mediaJSON, doc: &doc.json},
			{mediaType: mediaV3Proto, contentType: mediaV3Proto, doc: &doc.proto},
			{mediaType: mediaV3ProtoDeprecated, contentType: mediaV3Proto, doc: &doc.proto},
		})
	default:
		http.NotFound(w, r)
	}
}

// negotiate serves the first offer the Accept header admits, taking the
// header's ranges by decreasing quality and, within a range, the offers in
// order; a missing header admits anything.
func (d *Docs) negotiate(w http.ResponseWriter, r *http.Request, offers []offer) {
	w.Header().Add("Vary", "Accept")
	accept := r.Header.Get("Accept")
	if strings.TrimSpace(accept) == "" {
		accept = "*/*"
	}
	for _, rng := range parseAccept(accept) {
		for _, o := range offers {
			if rng.matches(o.mediaType) {
				d.serve(w, r, o.contentType, o.doc)
				return
			}
		}
	}
	w.Header().Del("Cache-Control")
	w.Header().Del("Expires")
	http.Error(w, "none of the requested media types is served; use application/json", http.StatusNotAcceptable)
}

// serve writes doc with its ETag; http.ServeContent answers If-None-Match.
func (d *Docs) serve(w http.ResponseWriter, r *http.Request, contentType string, doc *document) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Etag", strconv.Quote(doc.etag))
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(doc.data))
}

// mediaRange is one clause of an Accept header.
type mediaRange struct {
	typ, sub string
	q        float64
}

// parseAccept splits an Accept header into its media ranges, highest
// quality first (stable for equal quality), dropping ranges with q=0 and
// malformed ones.
func parseAccept(h string) []mediaRange {
	var out []mediaRange
	for clause := range strings.SplitSeq(h, ",") {
		parts := strings.Split(clause, ";")
		mt := strings.ToLower(strings.TrimSpace(parts[0]))
		typ, sub, ok := strings.Cut(mt, "/")
		if !ok || typ == "" || sub == "" {
			continue
		}
		q := 1.0
		for _, p := range parts[1:] {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.EqualFold(strings.TrimSpace(k), "q") {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil || f < 0 || f > 1 {
					f = 0
				}
				q = f
			}
		}
		if q == 0 {
			continue
		}
		out = append(out, mediaRange{typ: typ, sub: sub, q: q})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].q > out[j].q })
	return out
}

// matches reports whether the range admits media type mt ("type/subtype").
func (m mediaRange) matches(mt string) bool {
	typ, sub, _ := strings.Cut(mt, "/")
	return (m.typ == "*" || m.typ == typ) && (m.sub == "*" || m.sub == sub)
}

var _ http.Handler = (*Docs)(nil)
