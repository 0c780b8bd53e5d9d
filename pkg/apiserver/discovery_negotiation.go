package apiserver

import (
	"encoding/json"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// Discovery content negotiation follows kube-apiserver's: the Accept
// header's clauses are taken in its order of preference (higher q first,
// then concrete types before wildcards; a q=0 clause is still a last
// resort, as kube-apiserver's parser keeps it), and the first clause that
// names a media type the document can be encoded in, with parameters the
// endpoint allows, wins. For /api and /apis the aggregated document is
// served when any acceptable clause asks for it (g=apidiscovery.k8s.io,
// v=v2, as=APIGroupDiscoveryList); otherwise the legacy document, whose
// clauses must not ask for a conversion (no as, g or v). Nothing acceptable
// is a 406.

// discoveryMediaType is one encoding of the discovery documents.
type discoveryMediaType struct {
	name        string // "application/json"
	typ, subtyp string
	// streams is set when the type has a watch stream encoding: a clause
	// with stream=watch still matches it.
	streams bool
}

// discoveryMediaTypes are the encodings kube-apiserver serves discovery in,
// in its order: the first is the answer to a missing Accept or */*.
var discoveryMediaTypes = [...]discoveryMediaType{
	{name: runtime.ContentTypeJSON, typ: "application", subtyp: "json", streams: true},
	{name: runtime.ContentTypeYAML, typ: "application", subtyp: "yaml"},
	{name: runtime.ContentTypeProtobuf, typ: "application", subtyp: "vnd.kubernetes.protobuf", streams: true},
}

// aggregatedDiscoveryGVK is the kind of the aggregated documents.
var aggregatedDiscoveryGVK = schema.GroupVersionKind{Group: "apidiscovery.k8s.io", Version: "v2", Kind: "APIGroupDiscoveryList"}

// encode encodes obj, of kind gvk, in the media type.
func (m discoveryMediaType) encode(obj runtime.Object, gvk schema.GroupVersionKind) ([]byte, error) {
	switch m.subtyp {
	case "vnd.kubernetes.protobuf":
		return encodeProtobuf(obj, gvk)
	case "yaml":
		data, err := json.Marshal(obj)
		if err != nil {
			return nil, err
		}
		return yaml.JSONToYAML(data)
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// negotiateDiscovery picks the media type of a discovery response to a
// request with the given Accept header: of the aggregated document when
// aggregated is set, else of a legacy one. ok is false when no clause is
// acceptable.
func negotiateDiscovery(header string, aggregated bool) (discoveryMediaType, bool) {
	if header == "" {
		// No Accept: the first type, and never the aggregated document.
		return discoveryMediaTypes[0], !aggregated
	}
	for _, c := range parseAccept(header) {
		typ, subtyp, _ := strings.Cut(c.typ, "/")
		for _, m := range discoveryMediaTypes {
			if (typ != m.typ || (subtyp != m.subtyp && subtyp != "*")) && (typ != "*" || subtyp != "*") {
				continue
			}
			if clauseAllows(c.params, m, aggregated) {
				return m, true
			}
		}
	}
	return discoveryMediaType{}, false
}

// clauseAllows reports whether a clause's parameters can be served in m:
// only watch streams, no server version, and a conversion to the aggregated
// kind exactly when aggregated (profile and unknown parameters are
// ignored).
func clauseAllows(params map[string]string, m discoveryMediaType, aggregated bool) bool {
	var convert *schema.GroupVersionKind
	for k, v := range params {
		switch k {
		case "as", "g", "v":
			if convert == nil {
				convert = &schema.GroupVersionKind{}
			}
			switch k {
			case "as":
				convert.Kind = v
			case "g":
				convert.Group = v
			default:
				convert.Version = v
			}
		case "stream":
			if v != "" && (!m.streams || v != "watch") {
				return false
			}
		case "sv":
			if v != "" {
				return false
			}
		}
	}
	if aggregated {
		return convert != nil && *convert == aggregatedDiscoveryGVK
	}
	return convert == nil
}

// discoveryNotAcceptable is kube-apiserver's 406 for a discovery request
// that accepts none of the encodings.
func discoveryNotAcceptable() error {
	names := make([]string, len(discoveryMediaTypes))
	for i, m := range discoveryMediaTypes {
		names[i] = m.name
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Message: "only the following media types are accepted: " + strings.Join(names, ", "),
		Reason:  metav1.StatusReasonNotAcceptable,
		Code:    http.StatusNotAcceptable,
	}}
}
