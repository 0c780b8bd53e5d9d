package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"unicode/utf8"

	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/kplane/kplane/pkg/admission"
)

// view is a request's objects at the version a webhook registered for:
// copies, with apiVersion and kind set, that the webhook call owns.
type view struct {
	kind       schema.GroupVersionKind
	object     runtime.Object
	oldObject  runtime.Object
	objectJSON []byte // object encoded, nil without object
	oldJSON    []byte
}

// viewCache keeps what one request's matching and calls derive from it:
// the views by kind, the equivalent resources. Not safe for concurrent
// use; reset when a mutation changes the object.
type viewCache struct {
	views map[schema.GroupVersionKind]*view

	equivalents     []admission.Equivalent
	haveEquivalents bool
}

func (c *viewCache) reset() { c.views = nil }

// equivalentsOf returns the resources equivalent to a's, asked once per
// request rather than once per webhook.
func (c *viewCache) equivalentsOf(a *admission.Attributes) []admission.Equivalent {
	if !c.haveEquivalents {
		c.equivalents, c.haveEquivalents = a.Objects.EquivalentResources(a.Resource, a.Subresource), true
	}
	return c.equivalents
}

func (c *viewCache) get(a *admission.Attributes, kind schema.GroupVersionKind) (*view, error) {
	if v, ok := c.views[kind]; ok {
		return v, nil
	}
	v, err := newView(a, kind)
	if err != nil {
		return nil, err
	}
	if c.views == nil {
		c.views = map[schema.GroupVersionKind]*view{}
	}
	c.views[kind] = v
	return v, nil
}

func newView(a *admission.Attributes, kind schema.GroupVersionKind) (*view, error) {
	v := &view{kind: kind}
	var err error
	if v.object, v.objectJSON, err = viewOf(a, a.Object, kind); err != nil {
		return nil, internalError(err)
	}
	if v.oldObject, v.oldJSON, err = viewOf(a, a.OldObject, kind); err != nil {
		return nil, internalError(err)
	}
	return v, nil
}

// viewOf returns a copy of obj at kind and its JSON.
func viewOf(a *admission.Attributes, obj runtime.Object, kind schema.GroupVersionKind) (runtime.Object, []byte, error) {
	if obj == nil || reflect.ValueOf(obj).IsNil() {
		return nil, nil, nil
	}
	var out runtime.Object
	if kind != a.Kind && a.Objects != nil {
		var err error
		if out, err = a.Objects.ConvertTo(obj, kind); err != nil {
			return nil, nil, err
		}
	} else {
		out = obj.DeepCopyObject()
	}
	out.GetObjectKind().SetGroupVersionKind(kind)
	data, err := json.Marshal(out)
	if err != nil {
		return nil, nil, err
	}
	return out, data, nil
}

// newRequest is the AdmissionRequest a webhook receives for a, seen as
// inv; uid identifies the call.
func newRequest(a *admission.Attributes, inv admission.Invocation, v *view, uid types.UID) *admissionv1.AdmissionRequest {
	r := admission.NewRequest(a, inv)
	r.UID = uid
	r.Options = runtime.RawExtension{Object: optionsWithKind(a.Options)}
	if v != nil {
		r.Object = runtime.RawExtension{Raw: v.objectJSON, Object: v.object}
		r.OldObject = runtime.RawExtension{Raw: v.oldJSON, Object: v.oldObject}
	}
	return r
}

// optionsWithKind returns the request's options with apiVersion and kind
// set, as webhooks receive them (meta.k8s.io/v1 CreateOptions ...).
func optionsWithKind(o runtime.Object) runtime.Object {
	if o == nil || reflect.ValueOf(o).IsNil() {
		return nil
	}
	if !o.GetObjectKind().GroupVersionKind().Empty() {
		return o
	}
	o = o.DeepCopyObject()
	var kind string
	switch o.(type) {
	case *metav1.CreateOptions:
		kind = "CreateOptions"
	case *metav1.UpdateOptions:
		kind = "UpdateOptions"
	case *metav1.PatchOptions:
		kind = "PatchOptions"
	case *metav1.DeleteOptions:
		kind = "DeleteOptions"
	default:
		return o
	}
	o.GetObjectKind().SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind(kind))
	return o
}

// wireReview is an AdmissionReview of either version: their requests have
// the same fields.
type wireReview struct {
	metav1.TypeMeta `json:",inline"`
	Request         *admissionv1.AdmissionRequest `json:"request,omitempty"`
}

// encodeReview returns the AdmissionReview sent to h for a, at the first
// version of h's admissionReviewVersions kplane speaks, with a new uid.
func encodeReview(h *hook, a *admission.Attributes, inv admission.Invocation, v *view) (types.UID, string, []byte, error) {
	for _, version := range h.versions {
		if version != admissionv1.SchemeGroupVersion.Version && version != admissionv1beta1.SchemeGroupVersion.Version {
			continue
		}
		uid := uuid.NewUUID()
		review := wireReview{
			TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.GroupName + "/" + version, Kind: "AdmissionReview"},
			Request:  newRequest(a, inv, v, uid),
		}
		body, err := json.Marshal(review)
		return uid, version, body, err
	}
	return "", "", nil, errors.New("webhook does not accept known AdmissionReview versions (v1, v1beta1)")
}

// response is what a webhook answered, checked.
type response struct {
	allowed          bool
	result           *metav1.Status
	patch            []byte
	patchType        admissionv1.PatchType
	warnings         []string
	auditAnnotations map[string]string
}

// decodeResponse decodes and checks a webhook's answer as Kubernetes'
// VerifyAdmissionResponse: v1 answers must repeat the uid and say
// admission.k8s.io/v1 AdmissionReview, a patch comes with its type, and
// validating webhooks send none.
func (p *plugin) decodeResponse(version string, uid types.UID, body []byte) (*response, error) {
	if version == admissionv1beta1.SchemeGroupVersion.Version {
		r := &admissionv1beta1.AdmissionReview{}
		if _, _, err := p.decoder.Decode(body, nil, r); err != nil {
			return nil, &decodeError{err}
		}
		if r.Response == nil {
			return nil, errors.New("webhook response was absent")
		}
		out := &response{allowed: r.Response.Allowed, result: r.Response.Result, warnings: r.Response.Warnings, auditAnnotations: r.Response.AuditAnnotations}
		if p.mutating && len(r.Response.Patch) > 0 {
			out.patch, out.patchType = r.Response.Patch, admissionv1.PatchTypeJSONPatch
		}
		return out, nil
	}
	r := &admissionv1.AdmissionReview{}
	if _, _, err := p.decoder.Decode(body, nil, r); err != nil {
		return nil, &decodeError{err}
	}
	if r.Response == nil {
		return nil, errors.New("webhook response was absent")
	}
	if r.Response.UID != uid {
		return nil, fmt.Errorf("expected response.uid=%q, got %q", uid, r.Response.UID)
	}
	if want := admissionv1.SchemeGroupVersion.WithKind("AdmissionReview"); r.GroupVersionKind() != want {
		return nil, fmt.Errorf("expected webhook response of %v, got %v", want.String(), r.GroupVersionKind().String())
	}
	out := &response{allowed: r.Response.Allowed, result: r.Response.Result, warnings: r.Response.Warnings, auditAnnotations: r.Response.AuditAnnotations}
	if p.mutating {
		if len(r.Response.Patch) > 0 && r.Response.PatchType == nil {
			return nil, errors.New("webhook returned response.patch but not response.patchType")
		}
		if len(r.Response.Patch) == 0 && r.Response.PatchType != nil {
			return nil, errors.New("webhook returned response.patchType but not response.patch")
		}
		out.patch = r.Response.Patch
		if r.Response.PatchType != nil {
			out.patchType = *r.Response.PatchType
			if out.patchType == "" {
				return nil, fmt.Errorf("webhook returned invalid response.patchType of %q", out.patchType)
			}
		}
	} else {
		if len(r.Response.Patch) > 0 {
			return nil, errors.New("validating webhook may not return response.patch")
		}
		if r.Response.PatchType != nil {
			return nil, errors.New("validating webhook may not return response.patchType")
		}
	}
	return out, nil
}

// decodeError is an answer that is not an AdmissionReview: in Kubernetes
// it fails inside the call ("failed to call webhook: ..."), not in the
// verification of the answer.
type decodeError struct{ err error }

func (e *decodeError) Error() string { return e.err.Error() }
func (e *decodeError) Unwrap() error { return e.err }

// forward records the warnings and audit annotations of a webhook's
// answer on a: warnings as they are (empty or invalid UTF-8 ones are
// dropped, as Kubernetes' warning headers cannot carry them), annotation
// keys prefixed with the webhook's name.
func (p *plugin) forward(h *hook, a *admission.Attributes, r *response) {
	for k, v := range r.auditAnnotations {
		key := h.name + "/" + k
		if err := a.AddAnnotation(key, v); err != nil {
			p.logger.Warn("failed to set admission audit annotation", "key", key, "webhook", h.name, "err", err)
		}
	}
	for _, w := range r.warnings {
		if w != "" && utf8.ValidString(w) {
			a.AddWarning(w)
		}
	}
}
