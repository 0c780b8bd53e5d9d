package apiserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/mergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kplane/kplane/internal/patch"
)

// servePatch handles PATCH of an object, its status or its scale with a
// JSON patch, a merge patch or a strategic merge patch. The patch applies
// to the stored state inside the storage's compare-and-swap loop; a patch
// that yields an invalid object stores nothing.
func (s *Server) servePatch(w http.ResponseWriter, r *http.Request, q *request) {
	f, err := s.negotiate(r, q.res)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ct := r.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)
	pt := types.PatchType(mt)
	switch {
	case pt == types.StrategicMergePatchType && q.res.custom != nil:
		// Custom resources have no Go type to merge by, as in Kubernetes.
		s.writeError(w, r, &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
			Message: fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml; got %q", ct),
		}})
		return
	}
	switch pt {
	case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType:
	case types.ApplyYAMLPatchType:
	default:
		accepted := "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
		if q.res.custom == nil {
			accepted = "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"
		}
		s.writeError(w, r, &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
			Message: fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s; got %q", accepted, ct),
		}})
		return
	}
	opts, err := parsePatchOptions(r, pt == types.ApplyYAMLPatchType)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	body, err := s.readBody(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if pt == types.ApplyYAMLPatchType {
		s.serveApply(w, r, q, f, opts, body)
		return
	}
	// As in kube-apiserver, a body that does not decode is reported only
	// once the object is known to exist.
	bodyErr := checkPatchBody(pt, body, opts.fieldValidation)
	var warnings []string
	var compute computeFunc
	if q.subresource == "scale" {
		compute = scaleCompute(q, func(cur *autoscalingv1.Scale) (*autoscalingv1.Scale, error) {
			out := &autoscalingv1.Scale{}
			w, err := applyPatch(pt, body, cur, out, scaleGVK, opts.fieldValidation, nil)
			warnings = w
			return out, err
		})
	} else {
		compute = func(current runtime.Object) (runtime.Object, error) {
			q.res.setKind(current)
			out := q.res.strategy.New()
			w, err := applyPatch(pt, body, current, out, q.res.info.GVK, opts.fieldValidation, q.res.pruner())
			warnings = w
			if err != nil {
				return nil, err
			}
			if err := checkNameAndNamespace(q, out); err != nil {
				return nil, err
			}
			// A patch states no preconditions: a uid it changes is an
			// immutable field changed (422), where a PUT's uid is a
			// precondition (409).
			if uid, cur := accessor(out).GetUID(), accessor(current).GetUID(); uid != "" && uid != cur {
				return nil, q.res.invalid(q.name, field.ErrorList{field.Invalid(field.NewPath("metadata", "uid"), uid, "field is immutable")})
			}
			q.res.strategy.Default(out)
			return out, nil
		}
	}
	// A patch never creates an object.
	missingCheck := compute
	compute = func(current runtime.Object) (runtime.Object, error) {
		if accessor(current).GetResourceVersion() == "" {
			return nil, apierrors.NewNotFound(q.gr(), q.name)
		}
		if bodyErr != nil {
			return nil, bodyErr
		}
		return missingCheck(current)
	}
	compute = s.tracked(r, q, compute)
	pq := *q
	pq.adm = newWriteAdmission(opts)
	out, _, err := s.write(r.Context(), &pq, opts.dryRun, compute)
	addWarnings(w, pq.adm.finish(r.Context()))
	if err != nil {
		s.writeErrorFor(w, r, err, q.gr(), q.name)
		return
	}
	addWarnings(w, warnings)
	addWarnings(w, q.res.warnings(out))
	s.writeResult(w, r, q, http.StatusOK, f, out)
}

// applyPatch patches the JSON of current and decodes the result into out.
func applyPatch(pt types.PatchType, body []byte, current, out runtime.Object, gvk schema.GroupVersionKind, fieldValidation string, prune pruneFunc) ([]string, error) {
	doc, err := json.Marshal(current)
	if err != nil {
		return nil, err
	}
	var patched []byte
	switch pt {
	case types.JSONPatchType:
		patched, err = applyJSONPatch(doc, body)
	case types.MergePatchType:
		patched, err = patch.MergePatch(doc, body)
	case types.StrategicMergePatchType:
		schemaObj := current.DeepCopyObject()
		patched, err = strategicpatch.StrategicMergePatch(doc, body, schemaObj)
		if err != nil {
			err = interpretStrategicError(err)
		}
	}
	if err != nil {
		var se *apierrors.StatusError
		switch {
		case errors.As(err, &se):
			return nil, se
		case errors.Is(err, patch.ErrBadPatch):
			return nil, apierrors.NewBadRequest(err.Error())
		default:
			return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "patch", schema.GroupResource{}, "", err.Error(), 0, false)
		}
	}
	return decodeInto(patched, out, gvk, fieldValidation, prune)
}

// maxJSONPatchOperations bounds the operations of a JSON patch, as in
// kube-apiserver.
const maxJSONPatchOperations = 10000

// applyJSONPatch applies a JSON patch whose shape checkPatchBody accepted.
// As in kube-apiserver, every failure is then the patch not applying: 422
// with the generic message, the cause not shown.
func applyJSONPatch(doc, body []byte) ([]byte, error) {
	out, err := patch.JSONPatch(doc, body)
	if err != nil {
		return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
	}
	return out, nil
}

// jsonPatchOp is the shape a JSON patch operation is first decoded into
// under strict or warning field validation, as kube-apiserver does.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	From  string `json:"from"`
	Value any    `json:"value"`
}

// kubePatchTypeNames rewrites the Go type names decoding errors carry into
// the names kube-apiserver's decoding errors carry, so that clients see the
// same message.
var kubePatchTypeNames = strings.NewReplacer(
	"apiserver.jsonPatchOp", "handlers.jsonPatchOp",
	"[]map[string]*json.RawMessage", "jsonpatch.Patch",
	"map[string]*json.RawMessage", "jsonpatch.Operation",
)

// checkPatchBody decodes a patch body as kube-apiserver does before applying
// it and returns its 400 answer, worded the same, when the body does not
// decode: not JSON, or JSON of the wrong shape (a JSON patch must be a list
// of objects; a merge patch and a strategic merge patch an object).
func checkPatchBody(pt types.PatchType, body []byte, fieldValidation string) error {
	decodeErr := func(err error) string { return kubePatchTypeNames.Replace(err.Error()) }
	checked := fieldValidation == metav1.FieldValidationStrict || fieldValidation == metav1.FieldValidationWarn
	switch pt {
	case types.JSONPatchType:
		if checked {
			var ops []jsonPatchOp
			if err := json.Unmarshal(body, &ops); err != nil {
				return apierrors.NewBadRequest("error decoding patch: " + decodeErr(err))
			}
		}
		var ops []map[string]*json.RawMessage
		if err := json.Unmarshal(body, &ops); err != nil {
			return apierrors.NewBadRequest(decodeErr(err))
		}
		if len(ops) > maxJSONPatchOperations {
			return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, len(ops)))
		}
	case types.MergePatchType:
		if checked {
			var m map[string]any
			if err := json.Unmarshal(body, &m); err != nil {
				return apierrors.NewBadRequest("error decoding patch: " + decodeErr(err))
			}
		}
		if !json.Valid(body) {
			return apierrors.NewBadRequest("Invalid JSON Patch")
		}
	case types.StrategicMergePatchType:
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			return apierrors.NewBadRequest(decodeErr(err))
		}
	}
	return nil
}

// interpretStrategicError maps strategic merge patch failures to the codes
// kube-apiserver answers with.
func interpretStrategicError(err error) error {
	switch {
	case errors.Is(err, mergepatch.ErrBadJSONDoc), errors.Is(err, mergepatch.ErrBadPatchFormatForPrimitiveList),
		errors.Is(err, mergepatch.ErrBadPatchFormatForRetainKeys), errors.Is(err, mergepatch.ErrBadPatchFormatForSetElementOrderList),
		errors.Is(err, mergepatch.ErrUnsupportedStrategicMergePatchFormat):
		return apierrors.NewBadRequest(err.Error())
	case errors.Is(err, mergepatch.ErrNoListOfLists), errors.Is(err, mergepatch.ErrPatchContentNotMatchRetainKeys):
		return apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
	}
	return apierrors.NewBadRequest(err.Error())
}
