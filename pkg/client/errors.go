package client

import (
	"mime"
	"net/http"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// maxErrorText caps how much of a non-Status error body becomes the message.
const maxErrorText = 1024

// decodeError turns a non-2xx response into an *apierrors.StatusError. A
// body that is a failed metav1.Status is returned as is; anything else
// becomes the generic error for the HTTP status code, with the body as the
// message when it is text, as client-go does.
func decodeError(resp *http.Response, body []byte, method string, ec errorContext) error {
	if st, ok := decodeStatus(resp.Header.Get("Content-Type"), body); ok && st.Status == metav1.StatusFailure {
		return &apierrors.StatusError{ErrStatus: *st}
	}
	message := "unknown"
	if isText(resp.Header.Get("Content-Type")) {
		b := body
		if len(b) > maxErrorText {
			b = b[:maxErrorText]
		}
		message = strings.TrimSpace(string(b))
	}
	retryAfter := 0
	if h := resp.Header.Get("Retry-After"); h != "" {
		if n, err := strconv.Atoi(h); err == nil {
			retryAfter = n
		}
	}
	return apierrors.NewGenericServerResponse(resp.StatusCode, method,
		schema.GroupResource{Group: ec.group, Resource: ec.resource}, ec.name, message, retryAfter, true)
}

// decodeStatus decodes body as a metav1.Status if it is JSON of kind Status.
func decodeStatus(contentType string, body []byte) (*metav1.Status, bool) {
	if len(body) == 0 {
		return nil, false
	}
	if contentType != "" {
		media, _, err := mime.ParseMediaType(contentType)
		if err != nil || media != "application/json" {
			return nil, false
		}
	}
	var st metav1.Status
	if err := utiljson.Unmarshal(body, &st); err != nil || st.Kind != "Status" {
		return nil, false
	}
	return &st, true
}

// isText reports whether a response of this content type is readable text.
// No content type counts as text, as client-go treats it.
func isText(contentType string) bool {
	if contentType == "" {
		return true
	}
	media, _, err := mime.ParseMediaType(contentType)
	return err == nil && strings.HasPrefix(media, "text/")
}
