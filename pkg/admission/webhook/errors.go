package webhook

import (
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// callError is a failure to get an answer from a webhook (it could not be
// reached, timed out, answered something invalid): the webhook's
// failurePolicy decides whether the request fails. Kubernetes'
// ErrCallingWebhook, with its wording.
type callError struct {
	webhook string
	reason  error
	// status is what the failure is counted as in the metrics.
	status *apierrors.StatusError
}

func (e *callError) Error() string {
	if e.reason != nil {
		return fmt.Sprintf("failed calling webhook %q: %v", e.webhook, e.reason)
	}
	return fmt.Sprintf("failed calling webhook %q; no further details available", e.webhook)
}

func (e *callError) Unwrap() error { return e.reason }

func (e *callError) code() int {
	if e.status == nil {
		return 0
	}
	return int(e.status.ErrStatus.Code)
}

// rejection is a webhook's answer allowed: false.
type rejection struct {
	status *apierrors.StatusError
}

func (e *rejection) Error() string { return e.status.Error() }

// denied returns the error a webhook's denial reaches the client as: its
// status (code at least 400, status Failure) with the message prefixed by
// the webhook's name, as Kubernetes' ToStatusErr.
func denied(webhook string, result *metav1.Status) *apierrors.StatusError {
	const prefix = "admission webhook %q denied the request"
	var st metav1.Status
	if result != nil {
		st = *result.DeepCopy()
	} else {
		st.Status = metav1.StatusFailure
	}
	if st.Code < http.StatusBadRequest {
		st.Code = http.StatusBadRequest
	}
	if st.Status == "" || st.Status == metav1.StatusSuccess {
		st.Status = metav1.StatusFailure
	}
	by := fmt.Sprintf(prefix, webhook)
	switch {
	case st.Message != "":
		st.Message = by + ": " + st.Message
	case st.Reason != "":
		st.Message = by + ": " + string(st.Reason)
	default:
		st.Message = by + " without explanation"
	}
	return &apierrors.StatusError{ErrStatus: st}
}

// dryRunUnsupported is the 400 of a dry-run request that reaches a
// webhook with side effects.
func dryRunUnsupported(webhook string) *apierrors.StatusError {
	return apierrors.NewBadRequest(fmt.Sprintf("admission webhook %q does not support dry run", webhook))
}
