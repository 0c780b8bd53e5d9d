package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/pkg/storage"
)

// conflictMessage is kube-apiserver's explanation of an optimistic
// concurrency failure.
const conflictMessage = "the object has been modified; please apply your changes to the latest version and try again"

// messageError is an error whose text is a message clients see verbatim,
// capitalized as kube-apiserver writes it.
type messageError string

func (e messageError) Error() string { return string(e) }

// preconditionFailed is the 409 answer when a write's precondition does not hold.
func preconditionFailed(gr schema.GroupResource, name, msg string) error {
	return apierrors.NewConflict(gr, name, messageError(msg))
}

// toStatusError turns any error into the *apierrors.StatusError a client
// receives. gr and name qualify storage errors.
func toStatusError(err error, gr schema.GroupResource, name string) *apierrors.StatusError {
	var se *apierrors.StatusError
	if errors.As(err, &se) {
		return se
	}
	var ae apierrors.APIStatus
	if errors.As(err, &ae) {
		st := ae.Status()
		return &apierrors.StatusError{ErrStatus: st}
	}
	var serr *storage.Error
	if errors.As(err, &serr) {
		switch serr.Code {
		case storage.ErrCodeKeyNotFound:
			return apierrors.NewNotFound(gr, name)
		case storage.ErrCodeKeyExists:
			return apierrors.NewAlreadyExists(gr, name)
		case storage.ErrCodeResourceVersionConflicts:
			return apierrors.NewConflict(gr, name, messageError(conflictMessage))
		case storage.ErrCodeInvalidObj:
			return apierrors.NewConflict(gr, name, errors.New(serr.Detail))
		case storage.ErrCodeExpired:
			msg := "too old resource version"
			if serr.ResourceVersion != 0 {
				msg = fmt.Sprintf("too old resource version: %d", serr.ResourceVersion)
			}
			if serr.Detail != "" {
				msg += " (" + serr.Detail + ")"
			}
			return apierrors.NewResourceExpired(msg)
		case storage.ErrCodeInvalidRequest:
			// A malformed request: kube-apiserver's storage answers these
			// (a bad resourceVersion, a continue token next to a
			// resourceVersion) with 400 BadRequest.
			return apierrors.NewBadRequest(serr.Detail)
		case storage.ErrCodeInvalidContinue:
			return apierrors.NewBadRequest("invalid continue token: " + serr.Detail)
		case storage.ErrCodeTooLargeResourceVersion:
			se := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d", serr.ResourceVersion), 1)
			se.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
			return se
		}
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return apierrors.NewTimeoutError("request did not complete within the allowed duration", 0)
	case errors.Is(err, context.Canceled):
		return apierrors.NewTimeoutError("request was cancelled", 0)
	}
	return apierrors.NewInternalError(err)
}

// writeError answers with err as a metav1.Status.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	s.writeErrorFor(w, r, err, schema.GroupResource{}, "")
}

// writeErrorFor answers with err as a metav1.Status, naming gr and name in
// storage errors.
func (s *Server) writeErrorFor(w http.ResponseWriter, r *http.Request, err error, gr schema.GroupResource, name string) {
	se := toStatusError(err, gr, name)
	st := se.ErrStatus
	st.Kind, st.APIVersion = "Status", "v1"
	if st.Status == "" {
		st.Status = metav1.StatusFailure
	}
	if st.Code == 0 {
		st.Code = http.StatusInternalServerError
	}
	if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
		// As kube-apiserver does: client-go retries such answers after the delay.
		w.Header().Set("Retry-After", strconv.Itoa(int(st.Details.RetryAfterSeconds)))
	}
	if st.Code >= 500 && st.Reason != metav1.StatusReasonTimeout {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeStatus(w, r, int(st.Code), &st)
}

// writeStatus writes a Status in the encoding the Accept header asks for,
// JSON when it asks for none the server has, as kube-apiserver negotiates
// its errors: any encoding, no transformation.
func writeStatus(w http.ResponseWriter, r *http.Request, code int, st *metav1.Status) {
	f, _ := negotiateMedia(r.Header.Get("Accept"), restrictError)
	data, err := encodeAs(f.media, st)
	if err != nil {
		writeJSON(w, code, st)
		return
	}
	writeEncoded(w, code, f.media, data)
}

// methodNotAllowed is kube-apiserver's 405 for a method a path does not
// serve (its router answers these before any resource is involved).
func methodNotAllowed(*http.Request) error {
	return apierrors.NewGenericServerResponse(http.StatusMethodNotAllowed, "", schema.GroupResource{}, "", "", 0, false)
}

// notFound is kube-apiserver's answer for a path it does not serve.
func notFound() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Message: "the server could not find the requested resource",
		Reason:  metav1.StatusReasonNotFound,
		Details: &metav1.StatusDetails{},
		Code:    http.StatusNotFound,
	}}
}

// unsupportedMediaType is the 415 answer for a body type the server cannot read.
func unsupportedMediaType(contentType string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Message: fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf; got %q", contentType),
		Reason:  metav1.StatusReasonUnsupportedMediaType,
		Code:    http.StatusUnsupportedMediaType,
	}}
}

// notAcceptable is the 406 answer when no type in Accept can be served.
func notAcceptable() error {
	return notAcceptableOf("application/json, application/yaml, " + protobufType)
}

// notAcceptableWatch is the 406 answer when no type in Accept can be
// served as a watch stream.
func notAcceptableWatch() error {
	return notAcceptableOf("application/json;stream=watch, " + protobufType + ";stream=watch")
}

// notAcceptableOf is kube-apiserver's 406 answer naming the media types
// it offers.
func notAcceptableOf(types string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Message: "only the following media types are accepted: " + types,
		Reason:  metav1.StatusReasonNotAcceptable,
		Code:    http.StatusNotAcceptable,
	}}
}
