package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/google/cel-go/common/types/ref"
	"github.com/prometheus/client_golang/prometheus"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "sigs.k8s.io/json"

	"github.com/kplane/kplane/internal/patch"
	"github.com/kplane/kplane/pkg/admission"
	admissioncel "github.com/kplane/kplane/pkg/admission/cel"
)

// The resources the mutating plugin reads.
var (
	mutatingPoliciesResource = admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingadmissionpolicies")
	mutatingBindingsResource = admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingadmissionpolicybindings")
)

// Mutating is the MutatingAdmissionPolicy plugin. It is safe for
// concurrent use.
type Mutating struct {
	*engine
	merger  admission.Merger
	metrics *mutationMetrics
	set     *hookSet[*admissionregistrationv1.MutatingAdmissionPolicy, *admissionregistrationv1.MutatingAdmissionPolicyBinding, *compiledMutating]
}

// mutatingHook is a MutatingAdmissionPolicy with its bindings.
type mutatingHook = hook[*admissionregistrationv1.MutatingAdmissionPolicy, *admissionregistrationv1.MutatingAdmissionPolicyBinding, *compiledMutating]

var _ admission.MutationInterface = (*Mutating)(nil)

// NewMutating returns the MutatingAdmissionPolicy plugin
// (admissionregistration.k8s.io/v1 policies and bindings, read from
// cfg.Source), with Kubernetes' semantics: the matching policies'
// mutations are applied in order of policy name, binding name and param,
// each policy's in its order; JSONPatch mutations as RFC 6902 patches,
// ApplyConfiguration ones merged by cfg.Merger. A policy with
// reinvocationPolicy IfNeeded whose object a later mutation changed runs
// again when the chain reinvokes the mutating plugins. cfg.Source is
// required; the other fields default as for NewValidating, and without
// cfg.Merger every ApplyConfiguration mutation fails. cfg.Metrics, when
// set, gets apiserver_mutating_admission_policy_check_total and
// check_duration_seconds.
func NewMutating(cfg *admission.Config) (admission.Interface, error) {
	e, err := newEngine(cfg, admission.MutatingAdmissionPolicy)
	if err != nil {
		return nil, err
	}
	m := &Mutating{engine: e, merger: cfg.Merger}
	if m.metrics, err = newMutationMetrics(cfg.Metrics); err != nil {
		return nil, err
	}
	m.set = &hookSet[*admissionregistrationv1.MutatingAdmissionPolicy, *admissionregistrationv1.MutatingAdmissionPolicyBinding, *compiledMutating]{e: e, kind: kind[*admissionregistrationv1.MutatingAdmissionPolicy, *admissionregistrationv1.MutatingAdmissionPolicyBinding, *compiledMutating]{
		policies: mutatingPoliciesResource,
		bindings: mutatingBindingsResource,
		policy: func(p *admissionregistrationv1.MutatingAdmissionPolicy) policyMeta {
			return policyMeta{name: p.Name, resourceVersion: p.ResourceVersion, matchConstraints: p.Spec.MatchConstraints, paramKind: p.Spec.ParamKind}
		},
		binding: func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) bindingMeta {
			return bindingMeta{name: b.Name, policyName: b.Spec.PolicyName, matchResources: b.Spec.MatchResources, paramRef: b.Spec.ParamRef}
		},
		compile: func(p *admissionregistrationv1.MutatingAdmissionPolicy) *compiledMutating {
			return compileMutating(&p.Spec)
		},
	}}
	return m, nil
}

// Handles reports true: policies may match any operation.
func (m *Mutating) Handles(admission.Operation) bool { return true }

// policyError is a failure of one policy (and binding): a
// misconfiguration or a mutation that failed, which the policy's
// failurePolicy decides on.
type policyError struct {
	policy  *admissionregistrationv1.MutatingAdmissionPolicy
	binding string // empty for the policy's own
	err     error
	reason  metav1.StatusReason
}

func (e policyError) Error() string {
	if e.binding != "" {
		return fmt.Sprintf("policy '%s' with binding '%s' denied request: %s", e.policy.Name, e.binding, e.err.Error())
	}
	return fmt.Sprintf("policy %q denied request: %s", e.policy.Name, e.err.Error())
}

// invocation is one policy, binding and param to apply.
type invocation struct {
	h       *mutatingHook
	binding int
	inv     admission.Invocation
	param   any
	key     string
}

// Admit applies the mutations of the policies whose bindings match a.
// Errors are refused with Kubernetes' message and reason when their
// policy's failurePolicy is Fail (the default) and ignored under Ignore.
func (m *Mutating) Admit(ctx context.Context, a *admission.Attributes) error {
	if admission.ConfiguresAdmission(a) {
		return nil
	}
	hooks, err := m.set.hooks(ctx)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if len(hooks) == 0 {
		return nil
	}
	r := m.newRequest(a)
	var errs []policyError
	var invs []invocation
	for _, h := range hooks {
		configError := func(err error, binding string) {
			what := "policy"
			if binding != "" {
				what = "binding"
			}
			errs = append(errs, policyError{policy: h.policy, binding: binding, err: fmt.Errorf("failed to configure %s: %w", what, err)})
		}
		inv, matches, err := r.matches(ctx, h.matcher)
		switch {
		case err != nil:
			configError(err, "")
			continue
		case !matches:
			continue
		case h.compiled.err != nil:
			configError(h.compiled.err, "")
			continue
		}
		params, err := paramsOf(m.engine, h)
		if err != nil {
			configError(err, "")
			continue
		}
		for i, bm := range h.bindingMetas {
			_, matches, err := r.matches(ctx, h.bindingMatchers[i])
			if err != nil {
				configError(err, bm.name)
				continue
			}
			if !matches {
				continue
			}
			paramObjs, err := r.collectParams(ctx, h.meta.paramKind, params, bm.paramRef)
			if err != nil {
				configError(err, bm.name)
				continue
			}
			for _, p := range paramObjs {
				invs = append(invs, invocation{h: h, binding: i, inv: inv, param: p, key: invocationKey(h.meta.name, bm.name, p)})
			}
		}
	}
	if len(invs) > 0 {
		more, err := m.dispatch(ctx, r, invs)
		if err != nil {
			return err
		}
		errs = append(errs, more...)
	}
	return refusal(a, errs)
}

// refusal is Kubernetes' answer to the errors of the policies whose
// failurePolicy is not Ignore: a Forbidden error with the first one's
// message and reason, each of them a cause.
func refusal(a *admission.Attributes, errs []policyError) error {
	var status *apierrors.StatusError
	for _, e := range errs {
		if fp := e.policy.Spec.FailurePolicy; fp != nil && *fp == admissionregistrationv1.Ignore {
			continue
		}
		msg := e.Error()
		if status == nil {
			if !errors.As(admission.NewForbidden(a, errors.New("admission request denied by policy")), &status) {
				return apierrors.NewInternalError(errors.New(msg))
			}
			status.ErrStatus.Message = msg
			if e.reason != "" {
				status.ErrStatus.Reason = e.reason
			}
			if status.ErrStatus.Details == nil {
				status.ErrStatus.Details = &metav1.StatusDetails{}
			}
		}
		status.ErrStatus.Details.Causes = append(status.ErrStatus.Details.Causes, metav1.StatusCause{Message: msg})
	}
	if status == nil {
		return nil
	}
	return status
}

// invocationKey names a policy, binding and param for reinvocation.
func invocationKey(policy, binding string, param any) string {
	key := policy + "\x00" + binding
	if p, ok := param.(map[string]any); ok {
		md, _ := p["metadata"].(map[string]any)
		ns, _ := md["namespace"].(string)
		name, _ := md["name"].(string)
		key += "\x00" + ns + "\x00" + name
	}
	return key
}

// reinvokeStateKey keys the plugin's state in the Attributes.
const reinvokeStateKey = admission.MutatingAdmissionPolicy

// policyReinvocation follows one request's policies from the first run
// of the mutating plugins to the reinvocation.
type policyReinvocation struct {
	// last is the object as the policies left it, while a reinvocable
	// policy ran since it last changed.
	last runtime.Object
	// ran are the IfNeeded invocations applied since the object last
	// changed; again those a change came after, to apply once more.
	ran, again map[string]bool
}

// changed records that the object changed after the invocations in ran.
func (p *policyReinvocation) changed() {
	for k := range p.ran {
		p.again[k] = true
	}
	clear(p.ran)
}

// dispatch applies the invocations in order to a.Object and returns the
// errors their failurePolicy decides on; an *apierrors.StatusError (the
// namespace cannot be read, a mutated object that does not decode)
// refuses the request whatever the failurePolicy.
func (m *Mutating) dispatch(ctx context.Context, r *request, invs []invocation) ([]policyError, error) {
	a := r.a
	st, _ := a.PluginState(reinvokeStateKey).(*policyReinvocation)
	if st == nil {
		st = &policyReinvocation{ran: map[string]bool{}, again: map[string]bool{}}
		a.SetPluginState(reinvokeStateKey, st)
	}
	reinvoking := a.IsReinvoke()
	if reinvoking && st.last != nil && !equality.Semantic.DeepEqual(st.last, a.Object) {
		st.changed() // a plugin after the policies changed the object
	}
	ns, err := r.namespace(ctx)
	if err != nil {
		var status *apierrors.StatusError
		if errors.As(err, &status) {
			return nil, status
		}
		return nil, apierrors.NewNotFound(namespacesResource.GroupResource(), a.Namespace)
	}
	cur, curKind := a.Object, a.Kind
	var errs []policyError
	for _, iv := range invs {
		h, bm := iv.h, iv.h.bindingMetas[iv.binding]
		if reinvoking && !st.again[iv.key] {
			continue
		}
		if cur != nil && iv.inv.Kind != curKind {
			if a.Objects == nil {
				errs = append(errs, policyError{policy: h.policy, err: fmt.Errorf("failed to configure policy: failed to convert object version: no conversion of %s to %s", curKind, iv.inv.Kind)})
				continue
			}
			converted, err := a.Objects.ConvertTo(cur, iv.inv.Kind)
			if err != nil {
				errs = append(errs, policyError{policy: h.policy, err: fmt.Errorf("failed to configure policy: failed to convert object version: %w", err)})
				continue
			}
			cur, curKind = converted, iv.inv.Kind
		}
		ov, err := r.objects(iv.inv)
		if err != nil {
			errs = append(errs, policyError{policy: h.policy, err: fmt.Errorf("failed to configure policy: failed to convert object version: %w", err)})
			continue
		}
		in := func(obj runtime.Object) (admissioncel.Input, error) {
			in := admissioncel.Input{
				OldObject: ov.oldObject, Request: ov.request,
				Authorizer: r.authz, User: a.User, Resource: admissioncel.ResourceOf(a),
			}
			if iv.param != nil {
				in.Params = iv.param
			}
			if ns != nil {
				in.Namespace = ns
			}
			o, err := admissioncel.ObjectValue(obj, curKind)
			if o != nil {
				in.Object = o
			}
			return in, err
		}
		c := h.compiled
		if c.matchConditions.Len() > 0 {
			input, err := in(cur)
			if err != nil {
				return nil, apierrors.NewInternalError(err)
			}
			ok, _, err := c.matchConditions.Match(c.compiler.NewActivation(ctx, input), admissioncel.RuntimeCostBudget)
			if err != nil {
				errs = append(errs, policyError{policy: h.policy, binding: bm.name, err: err, reason: metav1.StatusReasonInvalid})
				continue
			}
			if !ok {
				continue
			}
		}
		before := cur
		for _, cm := range c.mutations {
			if cur == nil {
				break // nothing to mutate (a delete)
			}
			start := m.now()
			input, err := in(cur)
			if err != nil {
				return nil, apierrors.NewInternalError(err)
			}
			out, err := m.mutate(ctx, c, cm, input, curKind, cur)
			m.metrics.observe(h.meta.name, bm.name, err, m.since(start))
			if err != nil {
				var status *apierrors.StatusError
				if errors.As(err, &status) {
					return nil, status
				}
				errs = append(errs, policyError{policy: h.policy, binding: bm.name, err: err, reason: metav1.StatusReasonInvalid})
				continue
			}
			cur = out
		}
		if !equality.Semantic.DeepEqual(before, cur) {
			st.changed()
			a.SetReinvocationRequested()
		}
		if h.policy.Spec.ReinvocationPolicy == admissionregistrationv1.IfNeededReinvocationPolicy {
			st.ran[iv.key] = true
		}
	}
	if cur != nil && curKind != a.Kind {
		back, err := a.Objects.ConvertTo(cur, a.Kind)
		if err != nil {
			return nil, apierrors.NewInternalError(fmt.Errorf("failed to convert object: %w", err))
		}
		cur = back
	}
	a.Object = cur
	st.last = nil
	if len(st.ran) > 0 && cur != nil {
		st.last = cur.DeepCopyObject()
	}
	return errs, nil
}

// mutate applies one mutation to obj (of kind gvk) and returns the new
// object; obj is not changed.
func (m *Mutating) mutate(ctx context.Context, c *compiledMutating, cm compiledMutation, in admissioncel.Input, gvk schema.GroupVersionKind, obj runtime.Object) (runtime.Object, error) {
	if cm.expr == nil {
		return nil, errMissingExpression(cm.patchType)
	}
	if err := cm.expr.Err(); err != nil {
		return nil, err
	}
	out, _, err := cm.expr.Eval(c.compiler.NewActivation(ctx, in), admissioncel.RuntimeCostBudget)
	if err != nil {
		return nil, err
	}
	var next runtime.Object
	switch cm.patchType {
	case admissionregistrationv1.PatchTypeJSONPatch:
		if next, err = applyJSONPatch(out, obj); err != nil {
			return nil, err
		}
	case admissionregistrationv1.PatchTypeApplyConfiguration:
		config, err := admissioncel.ApplyConfiguration(out)
		if err != nil {
			return nil, err
		}
		if m.merger == nil {
			return nil, errors.New("error applying patch: no schema to merge apply configurations with")
		}
		if next, err = m.merger.Merge(gvk, obj, config); err != nil {
			var status *apierrors.StatusError
			if errors.As(err, &status) {
				return nil, status
			}
			return nil, fmt.Errorf("error applying patch: %w", err)
		}
	default:
		return nil, errMissingExpression(cm.patchType)
	}
	// the object keeps the apiVersion and kind it had (often unset on
	// typed objects), so that only real changes count
	next.GetObjectKind().SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	return next, nil
}

// applyJSONPatch applies the operations a JSONPatch expression returned
// (out) to obj. A failed test operation leaves the object as it is, as in
// Kubernetes.
func applyJSONPatch(out ref.Val, obj runtime.Object) (runtime.Object, error) {
	ops, err := admissioncel.JSONPatchOps(out)
	if err != nil {
		return nil, err
	}
	doc := make([]map[string]any, 0, len(ops))
	for _, op := range ops {
		o := map[string]any{"op": op.Op, "path": op.Path}
		if op.From != "" {
			o["from"] = op.From
		}
		v, has, err := op.JSONValue()
		if err != nil {
			return nil, fmt.Errorf("JSONPath valueExpression evaluated to a type that could not marshal to JSON: %w", err)
		}
		if has {
			o["value"] = v
		}
		doc = append(doc, o)
	}
	patchJSON, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("JSONPath valueExpression evaluated to a type that could not marshal to JSON: %w", err)
	}
	objJSON, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("failed to create JSON patch: %w", err)
	}
	patched, err := patch.JSONPatch(objJSON, patchJSON)
	if errors.Is(err, patch.ErrTestFailed) {
		return obj, nil
	}
	if err != nil {
		return nil, fmt.Errorf("JSONPath: %w", err)
	}
	next, err := decodeAs(obj, patched)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return next, nil
}

// decodeAs decodes data into a new object of obj's Go type.
func decodeAs(obj runtime.Object, data []byte) (runtime.Object, error) {
	if _, ok := obj.(*unstructured.Unstructured); ok {
		u := &unstructured.Unstructured{}
		return u, u.UnmarshalJSON(data)
	}
	next, ok := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(runtime.Object)
	if !ok {
		return nil, fmt.Errorf("no new %T", obj)
	}
	return next, kjson.UnmarshalCaseSensitivePreserveInts(data, next)
}

// mutationMetrics are kube-apiserver's MutatingAdmissionPolicy metrics. A
// nil *mutationMetrics records nothing; safe for concurrent use.
type mutationMetrics struct {
	checks  *prometheus.CounterVec
	latency *prometheus.HistogramVec
}

func newMutationMetrics(reg prometheus.Registerer) (*mutationMetrics, error) {
	if reg == nil {
		return nil, nil
	}
	checks, latency, err := registerChecks(reg, "mutating_admission_policy",
		[]string{"policy", "policy_binding", "error_type"},
		"Mutations of admission policies applied, by policy, binding and error type.",
		"Time the mutation expressions counted by check_total took, in seconds, with its labels.")
	if err != nil {
		return nil, err
	}
	return &mutationMetrics{checks: checks, latency: latency}, nil
}

// observe records one mutation and its error (nil for none).
func (mm *mutationMetrics) observe(policy, binding string, err error, elapsed time.Duration) {
	if mm == nil {
		return
	}
	et := errorTypeNone
	if err != nil {
		et = errorTypeOf(err.Error())
	}
	mm.checks.WithLabelValues(policy, binding, et).Inc()
	mm.latency.WithLabelValues(policy, binding, et).Observe(elapsed.Seconds())
}
