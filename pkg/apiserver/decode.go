package apiserver

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kplane/kplane/pkg/audit"
	"github.com/kplane/kplane/pkg/registry"
)

// writeOptions are the query parameters shared by create, update and patch.
type writeOptions struct {
	dryRun          bool
	fieldValidation string // Strict, Warn (the default) or Ignore
	fieldManager    string
	// force is a server-side apply's force parameter.
	force bool
}

// parseWriteOptions reads dryRun and fieldValidation and checks them and
// fieldManager (and force, for a patch) as kube-apiserver does; kind names
// the options type in errors (CreateOptions, UpdateOptions, PatchOptions).
func parseWriteOptions(r *http.Request, kind string) (writeOptions, error) {
	return parseOptions(r, kind, false)
}

// parsePatchOptions reads the options of a patch, a server-side apply when
// apply is set: only an apply takes force, and it needs a fieldManager.
func parsePatchOptions(r *http.Request, apply bool) (writeOptions, error) {
	return parseOptions(r, "PatchOptions", apply)
}

func parseOptions(r *http.Request, kind string, apply bool) (writeOptions, error) {
	q := r.URL.Query()
	dryRun := q["dryRun"]
	fv := q.Get("fieldValidation")
	var errs field.ErrorList
	force := false
	if values, ok := q["force"]; ok && kind == "PatchOptions" {
		if !apply {
			errs = append(errs, field.Forbidden(field.NewPath("force"), "may not be specified for non-apply patch"))
		} else {
			v, err := strconv.ParseBool(values[0])
			if err != nil {
				return writeOptions{}, apierrors.NewBadRequest(fmt.Sprintf("force: invalid value %q: %v", values[0], err))
			}
			force = v
		}
	}
	if apply && q.Get("fieldManager") == "" {
		// kubectl names itself; controllers have to.
		errs = append(errs, field.Required(field.NewPath("fieldManager"), "is required for apply patch"))
	}
	errs = append(errs, metav1validation.ValidateFieldManager(q.Get("fieldManager"), field.NewPath("fieldManager"))...)
	errs = append(errs, metav1validation.ValidateDryRun(field.NewPath("dryRun"), dryRun)...)
	errs = append(errs, metav1validation.ValidateFieldValidation(field.NewPath("fieldValidation"), fv)...)
	if len(errs) > 0 {
		return writeOptions{}, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: kind}, "", errs)
	}
	if fv == "" {
		fv = metav1.FieldValidationWarn
	}
	return writeOptions{dryRun: len(dryRun) > 0, fieldValidation: fv, fieldManager: q.Get("fieldManager"), force: force}, nil
}

// readBody reads a request body of at most the configured size.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	body := http.MaxBytesReader(w, r.Body, s.cfg.MaxRequestBodyBytes)
	data, err := io.ReadAll(body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", s.cfg.MaxRequestBodyBytes))
		}
		return nil, apierrors.NewBadRequest("read request body: " + err.Error())
	}
	return data, nil
}

// protobufType is the media type of Kubernetes' protobuf encoding.
const protobufType = "application/vnd.kubernetes.protobuf"

// protobufMagic starts every protobuf-encoded Kubernetes object.
var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

// decodeBody reads an object body into obj, an object of kind gvk. JSON
// and YAML bodies are decoded with the field validation level; protobuf
// bodies (what client-go's typed clients and kubectl send by default) are
// decoded from the Kubernetes envelope. Other types are refused with 415.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, obj runtime.Object, gvk schema.GroupVersionKind, fieldValidation string, prune pruneFunc) ([]string, error) {
	ct := r.Header.Get("Content-Type")
	mt := "application/json"
	if ct != "" {
		var err error
		if mt, _, err = mime.ParseMediaType(ct); err != nil {
			return nil, unsupportedMediaType(ct)
		}
	}
	switch mt {
	case "application/json", "application/yaml", "application/x-yaml", "text/yaml", protobufType:
	default:
		return nil, unsupportedMediaType(ct)
	}
	data, err := s.readBody(w, r)
	if err != nil {
		return nil, err
	}
	var warnings []string
	if mt == protobufType {
		err = decodeProtobuf(data, obj, gvk)
	} else {
		if mt != "application/json" {
			if data, err = yaml.YAMLToJSON(data); err != nil {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v (%s)", gvk.Kind, err, summarizeBody(data)))
			}
		}
		warnings, err = decodeInto(data, obj, gvk, fieldValidation, prune)
	}
	if err != nil {
		return warnings, err
	}
	if m, ok := obj.(metav1.Object); ok {
		audit.LogRequestObject(r.Context(), m)
	}
	return warnings, nil
}

// decodeProtobuf decodes a protobuf envelope (magic, then a runtime.Unknown
// holding apiVersion, kind and the object's bytes) into obj.
func decodeProtobuf(data []byte, obj runtime.Object, gvk schema.GroupVersionKind) error {
	if !bytes.HasPrefix(data, protobufMagic) {
		return apierrors.NewBadRequest("protobuf body does not start with the Kubernetes protobuf magic number")
	}
	var u runtime.Unknown
	if err := u.Unmarshal(data[len(protobufMagic):]); err != nil {
		return apierrors.NewBadRequest("protobuf envelope: " + err.Error())
	}
	if u.APIVersion != "" && u.APIVersion != gvk.GroupVersion().String() || u.Kind != "" && u.Kind != gvk.Kind {
		return apierrors.NewBadRequest(fmt.Sprintf("the kind in the data (%s, %s) does not match the expected kind (%s)", u.APIVersion, u.Kind, gvk.String()))
	}
	if u.ContentEncoding != "" {
		return apierrors.NewBadRequest(fmt.Sprintf("protobuf content encoding %q is not supported", u.ContentEncoding))
	}
	pb, ok := obj.(interface{ Unmarshal([]byte) error })
	if !ok {
		return unsupportedMediaType(protobufType)
	}
	if err := pb.Unmarshal(u.Raw); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("error decoding %s from protobuf: %v", gvk.Kind, err))
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}

// decodeInto decodes JSON data into obj, an object of kind gvk, enforcing
// the field validation level. It returns the warnings to send (Warn) and a
// 400 error for malformed data, a mismatched kind or, with Strict, unknown
// and duplicate fields.
func decodeInto(data []byte, obj runtime.Object, gvk schema.GroupVersionKind, fieldValidation string, prune pruneFunc) ([]string, error) {
	u, custom := obj.(*unstructured.Unstructured)
	var strict []error
	var decodeErr error
	var tm metav1.TypeMeta
	typeKnown := false
	if custom {
		// A custom resource: decoded once, as JSON values (integers kept
		// as int64); its schema, not a Go type, tells the unknown fields.
		strict, decodeErr = kjson.UnmarshalStrict(data, &u.Object, kjson.DisallowDuplicateFields)
		if decodeErr == nil {
			tm, typeKnown = typeMetaOf(u.Object)
		}
	}
	if !typeKnown {
		if err := json.Unmarshal(data, &tm); err != nil {
			// kube-apiserver's words for a body it cannot read at all.
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): couldn't get version/kind; json parse error: %v (%s)",
				gvk.Kind, err, summarizeBody(data)))
		}
	}
	if tm.APIVersion != "" && tm.APIVersion != gvk.GroupVersion().String() {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", tm.APIVersion, gvk.GroupVersion().String()))
	}
	if tm.Kind != "" && tm.Kind != gvk.Kind {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the kind in the data (%s) does not match the expected kind (%s)", tm.Kind, gvk.Kind))
	}
	err := decodeErr
	if custom {
		if err == nil && u.Object == nil {
			err = errors.New("the object is null")
		}
		if err == nil {
			var unknown []error
			unknown, err = normalizeMetadata(u.Object)
			strict = append(strict, unknown...)
		}
	} else {
		strict, err = kjson.UnmarshalStrict(data, obj, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	}
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, gvk.Kind, err))
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	msgs := make([]string, 0, len(strict))
	for _, e := range strict {
		msgs = append(msgs, e.Error())
	}
	if prune != nil {
		for _, path := range prune(obj) {
			msgs = append(msgs, fmt.Sprintf("unknown field %q", path))
		}
	}
	if len(msgs) == 0 {
		return nil, nil
	}
	switch fieldValidation {
	case metav1.FieldValidationStrict:
		return nil, apierrors.NewBadRequest("strict decoding error: " + strings.Join(msgs, ", "))
	case metav1.FieldValidationIgnore:
		return nil, nil
	default:
		return msgs, nil
	}
}

// summarizeBody shows the start of a body in an error message as
// kube-apiserver does: as text when it looks like a JSON object, otherwise
// in hex, at most 30 bytes of it.
func summarizeBody(data []byte) string {
	const maxLen = 30
	switch {
	case len(data) == 0:
		return "<empty>"
	case data[0] == '{':
		if len(data) > maxLen {
			return string(data[:maxLen]) + " ..."
		}
		return string(data)
	default:
		if len(data) > maxLen {
			return hex.EncodeToString(data[:maxLen]) + " ..."
		}
		return hex.EncodeToString(data)
	}
}

// pruneFunc removes the fields a custom resource's schema does not know
// from a decoded object and returns their paths; nil for built-ins, whose
// Go types drop unknown fields while decoding.
type pruneFunc func(obj runtime.Object) []string

// pruner returns the resource's pruneFunc.
func (res *resource) pruner() pruneFunc {
	if p, ok := res.strategy.(registry.Pruner); ok {
		return p.Prune
	}
	return nil
}

// normalizeMetadata decodes a custom resource's metadata as ObjectMeta
// and stores it back in its canonical form, as kube-apiserver does: a
// field of the wrong type is an error, an unknown one is dropped and
// reported.
func normalizeMetadata(content map[string]any) ([]error, error) {
	raw, ok := content["metadata"]
	if !ok || raw == nil {
		delete(content, "metadata")
		return nil, nil
	}
	data, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	var om metav1.ObjectMeta
	strict, err := kjson.UnmarshalStrict(data, &om, kjson.DisallowUnknownFields)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	for i, e := range strict {
		strict[i] = fmt.Errorf("%s", strings.Replace(e.Error(), `unknown field "`, `unknown field "metadata.`, 1))
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&om)
	if err != nil {
		return nil, err
	}
	delete(m, "creationTimestamp")
	if !om.CreationTimestamp.IsZero() {
		m["creationTimestamp"] = om.CreationTimestamp.UTC().Format(time.RFC3339)
	}
	content["metadata"] = m
	return strict, nil
}

// typeMetaOf reads apiVersion and kind from decoded JSON values; ok is
// false when either is there but not a string.
func typeMetaOf(content map[string]any) (metav1.TypeMeta, bool) {
	var tm metav1.TypeMeta
	for key, dst := range map[string]*string{"apiVersion": &tm.APIVersion, "kind": &tm.Kind} {
		v, found := content[key]
		if !found {
			continue
		}
		s, ok := v.(string)
		if !ok {
			return tm, false
		}
		*dst = s
	}
	return tm, true
}
