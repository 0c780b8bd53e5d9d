package webhook

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kplane/kplane/pkg/admission"
)

// invoke calls h for a, seen as inv with objects v, and returns its
// checked answer with its warnings and audit annotations recorded on a.
// Errors are a *callError (failurePolicy decides), a *rejection (the
// webhook denied the request), or an *apierrors.StatusError the request
// fails with regardless of failurePolicy (a dry run h cannot take).
func (p *plugin) invoke(ctx context.Context, h *hook, a *admission.Attributes, inv admission.Invocation, v *view) (*response, error) {
	if a.DryRun {
		if err := h.dryRunError(); err != nil {
			return nil, err
		}
	}
	uid, version, body, err := encodeReview(h, a, inv, v)
	if err != nil {
		return nil, &callError{webhook: h.name, reason: fmt.Errorf("could not create admission objects: %w", err), status: apierrors.NewBadRequest("error creating admission objects")}
	}
	if h.clientErr != nil {
		return nil, &callError{webhook: h.name, reason: fmt.Errorf("could not get REST client: %w", h.clientErr), status: apierrors.NewBadRequest("error getting REST client")}
	}
	data, err := h.client.post(ctx, h.timeout, body)
	var resp *response
	if err == nil {
		resp, err = p.decodeResponse(version, uid, data)
		var de *decodeError
		if err != nil && !errors.As(err, &de) {
			return nil, &callError{webhook: h.name, reason: fmt.Errorf("received invalid webhook response: %w", err), status: apierrors.NewServiceUnavailable("error validating webhook response")}
		}
	}
	if err != nil {
		var status *apierrors.StatusError
		if !errors.As(err, &status) {
			if p.mutating {
				status = apierrors.NewServiceUnavailable("error calling webhook")
			} else {
				status = apierrors.NewBadRequest("error calling webhook")
			}
		}
		return nil, &callError{webhook: h.name, reason: fmt.Errorf("failed to call webhook: %w", err), status: status}
	}
	p.forward(h, a, resp)
	if !resp.allowed {
		return nil, &rejection{status: denied(h.name, resp.result)}
	}
	return resp, nil
}

// record counts a finished call in the metrics, as Kubernetes does.
func (p *plugin) record(h *hook, typ string, op admission.Operation, start time.Time, err error) {
	elapsed := p.clock.Since(start)
	var ce *callError
	var rej *rejection
	switch {
	case err == nil:
		p.metrics.observe(h.name, typ, string(op), elapsed, false, 200)
	case errors.As(err, &ce):
		rejected := !h.failOpen
		if rejected && !errors.Is(ce.reason, context.Canceled) {
			p.metrics.reject(h.name, typ, string(op), rejectionCallingWebhook, ce.code())
		}
		p.metrics.observe(h.name, typ, string(op), elapsed, rejected, ce.code())
	case errors.As(err, &rej):
		code := int(rej.status.ErrStatus.Code)
		p.metrics.reject(h.name, typ, string(op), rejectionNone, code)
		p.metrics.observe(h.name, typ, string(op), elapsed, true, code)
	default:
		p.metrics.reject(h.name, typ, string(op), rejectionInternal, 0)
		p.metrics.observe(h.name, typ, string(op), elapsed, true, 0)
	}
}
