package webhook

import (
	"context"
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kplane/kplane/pkg/admission"
)

// validator is ValidatingAdmissionWebhook.
type validator struct{ *plugin }

var _ admission.ValidationInterface = validator{}

// NewValidating builds ValidatingAdmissionWebhook: it calls the matching
// webhooks of the validatingwebhookconfigurations in parallel and waits
// for all of them; when several refuse the request, the refusal of the
// first in Kubernetes' order (configurations by name, webhooks in order)
// is returned, so that the answer does not depend on timing.
// Configurations are read from cfg.Source and compiled again only when
// its revision changes. Safe for concurrent use.
func NewValidating(cfg *admission.Config) (admission.Interface, error) {
	p, err := newPlugin(cfg, false)
	if err != nil {
		return nil, err
	}
	return validator{p}, nil
}

// Validate calls the matching validating webhooks.
func (v validator) Validate(ctx context.Context, a *admission.Attributes) error {
	if admission.ConfiguresAdmission(a) {
		return nil
	}
	hooks, err := v.hooks(ctx, a)
	if err != nil {
		return err
	}
	views := &viewCache{}
	var calls []call
	for _, h := range hooks {
		inv, ok, err := v.match(ctx, h, a, views)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if _, err := views.get(a, inv.Kind); err != nil {
			return err
		}
		calls = append(calls, call{hook: h, inv: inv, index: len(calls)})
	}
	if len(calls) == 0 {
		return nil
	}
	if ctx.Err() != nil {
		return apierrors.NewTimeoutError("request did not complete within requested timeout", 0)
	}
	errs := make([]error, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		view := views.views[c.inv.Kind] // read-only from here on
		wg.Go(func() {
			errs[i] = v.validateOne(ctx, c, a, view)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// validateOne calls one webhook and returns the error the request fails
// with, if any.
func (v validator) validateOne(ctx context.Context, c call, a *admission.Attributes, view *view) (err error) {
	h := c.hook
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if h.failOpen {
			v.logger.Warn("panic calling webhook, failing open", "webhook", h.name, "panic", r)
			v.metrics.failedOpen(h.name, typeValidating)
			v.annotate(a, fmt.Sprintf("%sround_0_index_%d", validatingFailedOpenPrefix, c.index), h.name)
			err = nil
			return
		}
		err = apierrors.NewInternalError(fmt.Errorf("ValidatingAdmissionWebhook/%v has panicked: %v", h.name, r))
	}()
	start := v.clock.Now()
	_, err = v.invoke(ctx, h, a, c.inv, view)
	v.record(h, typeValidating, a.Operation, start, err)
	if err == nil {
		return nil
	}
	var ce *callError
	if errors.As(err, &ce) {
		if h.failOpen {
			v.logger.Warn("failed calling webhook, failing open", "webhook", h.name, "err", err)
			v.metrics.failedOpen(h.name, typeValidating)
			v.annotate(a, fmt.Sprintf("%sround_0_index_%d", validatingFailedOpenPrefix, c.index), h.name)
			return nil
		}
		v.logger.Warn("failed calling webhook, failing closed", "webhook", h.name, "err", err)
		return apierrors.NewInternalError(err)
	}
	var rej *rejection
	if errors.As(err, &rej) {
		return rej.status
	}
	return err
}
