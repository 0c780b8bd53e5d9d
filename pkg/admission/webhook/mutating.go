package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "sigs.k8s.io/json"

	"github.com/kplane/kplane/internal/patch"
	"github.com/kplane/kplane/pkg/admission"
)

// The audit annotation prefixes of mutating webhooks, as Kubernetes.
const (
	patchAnnotationPrefix      = "patch.webhook.admission.k8s.io/"
	mutationAnnotationPrefix   = "mutation.webhook.admission.k8s.io/"
	mutatingFailedOpenPrefix   = "failed-open." + mutationAnnotationPrefix
	validatingFailedOpenPrefix = "failed-open.validating.webhook.admission.k8s.io/"
)

// reinvokeStateKey keys the mutating plugin's state in the Attributes.
const reinvokeStateKey = "MutatingAdmissionWebhook"

// mutator is MutatingAdmissionWebhook.
type mutator struct{ *plugin }

var _ admission.MutationInterface = mutator{}

// NewMutating builds MutatingAdmissionWebhook: it calls the webhooks of
// the mutatingwebhookconfigurations, one after another in Kubernetes'
// order, and applies their JSON patches to the object. A webhook with
// reinvocationPolicy IfNeeded whose object a later webhook changed is
// called once more when the chain reinvokes the mutating plugins.
// Configurations are read from cfg.Source and compiled again only when
// its revision changes. Safe for concurrent use.
func NewMutating(cfg *admission.Config) (admission.Interface, error) {
	p, err := newPlugin(cfg, true)
	if err != nil {
		return nil, err
	}
	return mutator{p}, nil
}

// reinvokeState follows one request's webhooks from the first run of the
// mutating plugins to the reinvocation, as Kubernetes'
// webhookReinvokeContext.
type reinvokeState struct {
	// last is the object as the webhooks left it, kept only while a
	// reinvocable webhook may need to see a later change.
	last runtime.Object
	// invoked are the reinvocable webhooks called since the object last
	// changed; a change moves them to reinvoke.
	invoked map[string]bool
	// reinvoke are the webhooks to call again in the second run.
	reinvoke map[string]bool
}

func (s *reinvokeState) objectChanged() {
	for uid := range s.invoked {
		s.reinvoke[uid] = true
	}
	clear(s.invoked)
}

// Admit calls the matching mutating webhooks in order.
func (m mutator) Admit(ctx context.Context, a *admission.Attributes) error {
	if admission.ConfiguresAdmission(a) {
		return nil
	}
	reinvoking := a.IsReinvoke()
	st, _ := a.PluginState(reinvokeStateKey).(*reinvokeState)
	if reinvoking {
		if st == nil || (len(st.reinvoke) == 0 && len(st.invoked) == 0) {
			return nil // no webhook was called: none is called again
		}
		if st.last != nil && !equality.Semantic.DeepEqual(st.last, a.Object) {
			st.objectChanged() // a plugin reinvoked before changed the object
		}
	}
	hooks, err := m.hooks(ctx, a)
	if err != nil {
		return err
	}
	defer func() {
		if st == nil {
			return
		}
		st.last = nil
		if len(st.invoked) > 0 && a.Object != nil {
			st.last = a.Object.DeepCopyObject()
		}
	}()
	round := 0
	if reinvoking {
		round = 1
	}
	views := &viewCache{}
	for i, h := range hooks {
		inv, ok, err := m.match(ctx, h, a, views)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		// A webhook is never called for the first time on reinvocation.
		if reinvoking && !st.reinvoke[h.uid] {
			continue
		}
		if st == nil {
			st = &reinvokeState{invoked: map[string]bool{}, reinvoke: map[string]bool{}}
			a.SetPluginState(reinvokeStateKey, st)
		}
		start := m.clock.Now()
		changed, err := m.admitOne(ctx, call{hook: h, inv: inv, index: i}, a, views, round)
		m.record(h, typeAdmit, a.Operation, start, err)
		if changed {
			views.reset()
			st.objectChanged()
			a.SetReinvocationRequested()
		}
		if h.reinvoke {
			st.invoked[h.uid] = true
		}
		if err == nil {
			continue
		}
		var ce *callError
		if errors.As(err, &ce) {
			if !h.failOpen {
				m.logger.Warn("failed calling webhook, failing closed", "webhook", h.name, "err", err)
				return apierrors.NewInternalError(err)
			}
			if !errors.Is(ce.reason, context.Canceled) {
				m.logger.Warn("failed calling webhook, failing open", "webhook", h.name, "err", err)
				m.metrics.failedOpen(h.name, typeAdmit)
				m.annotate(a, fmt.Sprintf("%sround_%d_index_%d", mutatingFailedOpenPrefix, round, i), h.name)
			}
			if ctx.Err() != nil {
				return apierrors.NewTimeoutError("request did not complete within requested timeout", 0)
			}
			continue
		}
		var rej *rejection
		if errors.As(err, &rej) {
			return rej.status
		}
		return err
	}
	return nil
}

// admitOne calls one webhook and applies its patch to a.Object; it
// reports whether the object changed. Every call leaves its mutation
// audit annotation, and every applied patch its patch annotation.
func (m mutator) admitOne(ctx context.Context, c call, a *admission.Attributes, views *viewCache, round int) (changed bool, err error) {
	h := c.hook
	// The objects are prepared before the call, whose every outcome
	// leaves the mutation annotation.
	v, err := views.get(a, c.inv.Kind)
	if err != nil {
		return false, err
	}
	defer func() {
		value, _ := json.Marshal(struct {
			Configuration string `json:"configuration"`
			Webhook       string `json:"webhook"`
			Mutated       bool   `json:"mutated"`
		}{h.configuration, h.name, changed})
		m.annotate(a, fmt.Sprintf("%sround_%d_index_%d", mutationAnnotationPrefix, round, c.index), string(value))
	}()
	resp, err := m.invoke(ctx, h, a, c.inv, v)
	if err != nil {
		return false, err
	}
	if len(resp.patch) == 0 {
		return false, nil
	}
	var ops []map[string]json.RawMessage
	if err := json.Unmarshal(resp.patch, &ops); err != nil {
		return false, &callError{webhook: h.name, reason: fmt.Errorf("received undecodable patch in webhook response: %w", err), status: apierrors.NewServiceUnavailable("error decoding patch in webhook response")}
	}
	if len(ops) == 0 {
		return false, nil
	}
	if v.object == nil {
		return false, apierrors.NewInternalError(fmt.Errorf("admission webhook %q attempted to modify the object, which is not supported for this operation", h.name))
	}
	if resp.patchType != admissionv1.PatchTypeJSONPatch {
		return false, &callError{webhook: h.name, reason: fmt.Errorf("unsupported patch type %q", resp.patchType), status: denied(h.name, resp.result)}
	}
	patched, err := patch.JSONPatch(v.objectJSON, resp.patch)
	if err != nil {
		return false, apierrors.NewInternalError(err)
	}
	obj, err := decodeLike(v.object, patched)
	if err != nil {
		return false, apierrors.NewInternalError(err)
	}
	if got := obj.GetObjectKind().GroupVersionKind(); got != v.kind {
		return false, apierrors.NewInternalError(fmt.Errorf("admission webhook %q attempted to change the object's kind from %s to %s", h.name, v.kind, got))
	}
	changed = !equality.Semantic.DeepEqual(v.object, obj)
	value, _ := json.Marshal(struct {
		Configuration string                       `json:"configuration"`
		Webhook       string                       `json:"webhook"`
		Patch         []map[string]json.RawMessage `json:"patch,omitempty"`
		PatchType     string                       `json:"patchType,omitempty"`
	}{h.configuration, h.name, ops, string(admissionv1.PatchTypeJSONPatch)})
	m.annotate(a, fmt.Sprintf("%sround_%d_index_%d", patchAnnotationPrefix, round, c.index), string(value))
	// Back at the request's version, with the request object's own
	// apiVersion and kind (often unset on typed objects).
	out := obj
	if v.kind != a.Kind && a.Objects != nil {
		if out, err = a.Objects.ConvertTo(obj, a.Kind); err != nil {
			return false, apierrors.NewInternalError(err)
		}
	}
	out.GetObjectKind().SetGroupVersionKind(a.Object.GetObjectKind().GroupVersionKind())
	a.Object = out
	return changed, nil
}

// decodeLike decodes data into a new object of like's Go type, as the
// API server decodes JSON (case-sensitive field names).
func decodeLike(like runtime.Object, data []byte) (runtime.Object, error) {
	if _, ok := like.(*unstructured.Unstructured); ok {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			return nil, err
		}
		return u, nil
	}
	obj, ok := reflect.New(reflect.TypeOf(like).Elem()).Interface().(runtime.Object)
	if !ok {
		return nil, fmt.Errorf("cannot create an object like %T", like)
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// annotate records an audit annotation, logging a conflict.
func (p *plugin) annotate(a *admission.Attributes, key, value string) {
	if err := a.AddAnnotation(key, value); err != nil {
		p.logger.Warn("failed to set webhook audit annotation", "key", key, "err", err)
	}
}
