package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/cel-go/common/types"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/admission"
	admissioncel "github.com/kplane/kplane/pkg/admission/cel"
)

// validationFailureAnnotation is the audit annotation the Audit action
// records a failed validation under.
const validationFailureAnnotation = "validation.policy.admission.k8s.io/validation_failure"

// Limits Kubernetes puts on what policies produce.
const (
	maxAuditAnnotationValueLength = 10 * 1024
	maxMessageLength              = 5 * 1024
)

// decision is the outcome of one validation (or of a misconfiguration).
type decision struct {
	deny bool
	// evalErr is set for an expression that failed to evaluate (the
	// failurePolicy decided deny)
	evalErr bool
	elapsed time.Duration
	message string
	reason  metav1.StatusReason
	policy  *admissionregistrationv1.ValidatingAdmissionPolicy
	binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding
}

// auditAnnotation is one audit annotation a binding produced.
type auditAnnotation struct {
	key, value string
	errMessage string // set when it failed with failurePolicy Fail
}

// Validate applies the policies whose bindings match a. The first denial
// (Deny action, or an error under failurePolicy Fail) refuses the
// request with Kubernetes' message, reason and code; Warn adds warnings
// and Audit audit annotations.
func (v *Validating) Validate(ctx context.Context, a *admission.Attributes) error {
	if admission.ConfiguresAdmission(a) {
		return nil
	}
	hooks, err := v.set.hooks(ctx)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if len(hooks) == 0 {
		return nil
	}
	r := v.newRequest(a)
	var denied []decision
	configError := func(err error, p *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
		switch fp := failurePolicy(p); fp {
		case admissionregistrationv1.Ignore:
			v.logger.Debug("ignoring misconfigured policy", "policy", p.Name, "err", err)
		case admissionregistrationv1.Fail:
			what := "policy"
			if b != nil {
				what = "binding"
			}
			denied = append(denied, decision{deny: true, message: fmt.Sprintf("failed to configure %s: %v", what, err), policy: p, binding: b})
		default:
			denied = append(denied, decision{deny: true, message: fmt.Sprintf("unrecognized failure policy: '%v'", fp), policy: p, binding: b})
		}
	}
	for _, h := range hooks {
		p := h.policy
		inv, matches, err := r.matches(ctx, h.matcher)
		if err != nil {
			configError(err, p, nil)
			continue
		}
		if !matches {
			continue
		}
		if h.compiled.err != nil {
			configError(h.compiled.err, p, nil)
			continue
		}
		params, err := paramsOf(v.engine, h)
		if err != nil {
			configError(err, p, nil)
			continue
		}
		audits := newAuditCollector()
		for i, b := range h.bindings {
			_, matches, err := r.matches(ctx, h.bindingMatchers[i])
			if err != nil {
				configError(err, p, b)
				continue
			}
			if !matches {
				continue
			}
			obj, err := r.objects(inv)
			if err != nil {
				configError(fmt.Errorf("failed to convert object version: %w", err), p, nil)
				continue
			}
			paramObjs, err := r.collectParams(ctx, p.Spec.ParamKind, params, b.Spec.ParamRef)
			if err != nil {
				configError(err, p, b)
				continue
			}
			ns, err := r.namespace(ctx)
			if err != nil {
				return err
			}
			for _, param := range paramObjs {
				res := v.evaluate(ctx, r, h, obj, param, ns)
				for i, d := range res.decisions {
					if !d.deny {
						if d.evalErr {
							v.metrics.observe(p.Name, b.Name, d, actionAllow)
						}
						continue
					}
					d.policy, d.binding = p, b
					for _, action := range b.Spec.ValidationActions {
						switch action {
						case admissionregistrationv1.Deny:
							denied = append(denied, d)
							v.metrics.observe(p.Name, b.Name, d, actionDeny)
						case admissionregistrationv1.Warn:
							a.AddWarning(fmt.Sprintf("Validation failed for ValidatingAdmissionPolicy '%s' with binding '%s': %s", p.Name, b.Name, d.message))
							v.metrics.observe(p.Name, b.Name, d, actionWarn)
						case admissionregistrationv1.Audit:
							v.publishValidationFailure(a, b, i, d)
							v.metrics.observe(p.Name, b.Name, d, actionAudit)
						}
					}
				}
				for _, an := range res.audits {
					if an.errMessage != "" {
						d := decision{deny: true, evalErr: true, message: an.errMessage, policy: p, binding: b}
						denied = append(denied, d)
						v.metrics.observe(p.Name, b.Name, d, actionDeny)
						continue
					}
					audits.add(an.key, an.value)
				}
			}
		}
		audits.publish(v, p.Name, a)
	}
	if len(denied) == 0 {
		return nil
	}
	return deniedError(a, denied[0])
}

func failurePolicy(p *admissionregistrationv1.ValidatingAdmissionPolicy) admissionregistrationv1.FailurePolicyType {
	if p.Spec.FailurePolicy == nil {
		return admissionregistrationv1.Fail
	}
	return *p.Spec.FailurePolicy
}

// deniedError is Kubernetes' answer to a denied request: a Forbidden
// error's message with the validation's reason and its code.
func deniedError(a *admission.Attributes, d decision) error {
	var msg string
	if d.binding != nil {
		msg = fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s", d.policy.Name, d.binding.Name, d.message)
	} else {
		msg = fmt.Sprintf("ValidatingAdmissionPolicy '%s' denied request: %s", d.policy.Name, d.message)
	}
	var status *apierrors.StatusError
	if !errors.As(admission.NewForbidden(a, errors.New(msg)), &status) {
		return apierrors.NewInternalError(errors.New(msg))
	}
	reason := d.reason
	if reason == "" {
		reason = metav1.StatusReasonInvalid
	}
	status.ErrStatus.Reason = reason
	status.ErrStatus.Code = reasonToCode(reason)
	if status.ErrStatus.Details == nil {
		status.ErrStatus.Details = &metav1.StatusDetails{}
	}
	status.ErrStatus.Details.Causes = append(status.ErrStatus.Details.Causes, metav1.StatusCause{Message: msg})
	return status
}

func reasonToCode(r metav1.StatusReason) int32 {
	switch r {
	case metav1.StatusReasonForbidden:
		return http.StatusForbidden
	case metav1.StatusReasonUnauthorized:
		return http.StatusUnauthorized
	case metav1.StatusReasonRequestEntityTooLarge:
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusUnprocessableEntity
}

// validationFailure is the JSON of the validation_failure audit
// annotation, as Kubernetes writes it.
type validationFailure struct {
	Message           string                                     `json:"message"`
	Policy            string                                     `json:"policy"`
	Binding           string                                     `json:"binding"`
	ExpressionIndex   int                                        `json:"expressionIndex"`
	ValidationActions []admissionregistrationv1.ValidationAction `json:"validationActions"`
}

func (v *Validating) publishValidationFailure(a *admission.Attributes, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding, index int, d decision) {
	value, err := json.Marshal([]validationFailure{{
		Message:           d.message,
		Policy:            b.Spec.PolicyName,
		Binding:           b.Name,
		ExpressionIndex:   index,
		ValidationActions: b.Spec.ValidationActions,
	}})
	if err != nil {
		v.logger.Warn("failed to encode the validation failure audit annotation", "policy", b.Spec.PolicyName, "binding", b.Name, "err", err)
		return
	}
	if err := a.AddAnnotation(validationFailureAnnotation, string(value)); err != nil {
		v.logger.Warn("failed to set the validation failure audit annotation", "policy", b.Spec.PolicyName, "binding", b.Name, "err", err)
	}
}

// auditCollector gathers the audit annotations of a policy's bindings:
// distinct values of one key are joined with ", ".
type auditCollector struct {
	keys   []string
	values map[string][]string
}

func newAuditCollector() *auditCollector { return &auditCollector{values: map[string][]string{}} }

func (c *auditCollector) add(key, value string) {
	vs, seen := c.values[key]
	for _, x := range vs {
		if x == value {
			return
		}
	}
	if !seen {
		c.keys = append(c.keys, key)
	}
	c.values[key] = append(vs, value)
}

func (c *auditCollector) publish(v *Validating, policy string, a *admission.Attributes) {
	for _, k := range c.keys {
		if err := a.AddAnnotation(policy+"/"+k, strings.Join(c.values[k], ", ")); err != nil {
			v.logger.Warn("failed to set an audit annotation", "policy", policy, "key", k, "err", err)
		}
	}
}

// result is what one binding and param produced.
type result struct {
	decisions []decision
	audits    []auditAnnotation
}

// evaluate runs a policy's expressions for one binding and param, as
// Kubernetes' validator does.
func (v *Validating) evaluate(ctx context.Context, r *request, h *validatingHook, ov *objectValues, param any, ns map[string]any) result {
	c := h.compiled
	fp := failurePolicy(h.policy)
	errDecision := func(msg string) decision {
		return decision{deny: fp != admissionregistrationv1.Ignore, evalErr: true, message: msg}
	}
	in := admissioncel.Input{
		Object: ov.object, OldObject: ov.oldObject, Request: ov.request,
		Authorizer: r.authz, User: r.a.User, Resource: admissioncel.ResourceOf(r.a),
	}
	if param != nil {
		in.Params = param
	}
	if ns != nil {
		in.Namespace = ns
	}
	act := c.compiler.NewActivation(ctx, in)
	if c.matchConditions.Len() > 0 {
		ok, _, err := c.matchConditions.Match(act, admissioncel.RuntimeCostBudget)
		if err != nil {
			if fp == admissionregistrationv1.Ignore {
				return result{}
			}
			return result{decisions: []decision{errDecision(err.Error())}}
		}
		if !ok {
			return result{}
		}
	}
	var res result
	budget := int64(admissioncel.RuntimeCostBudget)
	for _, cv := range c.validations {
		start := v.now()
		out, left, err := cv.expr.Eval(act, budget)
		if errors.Is(err, admissioncel.ErrOutOfBudget) {
			return result{decisions: []decision{errDecision(err.Error())}}
		}
		budget = left
		switch {
		case err != nil:
			d := errDecision(err.Error())
			d.elapsed = v.since(start)
			res.decisions = append(res.decisions, d)
		case out != types.True:
			d := decision{deny: true, reason: metav1.StatusReasonInvalid}
			if cv.spec.Reason != nil {
				d.reason = *cv.spec.Reason
			}
			var msgErr error
			d.message, budget, msgErr = message(act, cv, budget)
			if msgErr != nil {
				d = errDecision(fmt.Sprintf("failed messageExpression: %v", msgErr))
			}
			d.elapsed = v.since(start)
			res.decisions = append(res.decisions, d)
		default:
			res.decisions = append(res.decisions, decision{})
		}
	}
	budget = admissioncel.RuntimeCostBudget
	for _, ca := range c.audits {
		out, left, err := ca.value.Eval(act, budget)
		if errors.Is(err, admissioncel.ErrOutOfBudget) {
			return result{decisions: []decision{errDecision(err.Error())}}
		}
		budget = left
		an := auditAnnotation{key: ca.key}
		switch {
		case err != nil:
			if fp == admissionregistrationv1.Ignore {
				continue
			}
			an.errMessage = err.Error()
		case out == types.NullValue:
			continue
		default:
			s, ok := out.Value().(string)
			if !ok {
				an.errMessage = fmt.Sprintf("valueExpression '%v' resulted in unsupported return type: %v. Return type must be either string or null.", ca.value.Expression, out.Type().TypeName())
				break
			}
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			if len(s) > maxAuditAnnotationValueLength {
				s = s[:maxAuditAnnotationValueLength]
			}
			an.value = s
		}
		res.audits = append(res.audits, an)
	}
	return res
}

// message is a failed validation's message: its messageExpression's
// result when that is a usable string, else its message, else the
// expression. Only running out of budget is an error; other failures of
// the messageExpression fall back.
func message(act *admissioncel.Activation, cv compiledValidation, budget int64) (string, int64, error) {
	var msg string
	if cv.message != nil {
		out, left, err := cv.message.Eval(act, budget)
		if errors.Is(err, admissioncel.ErrOutOfBudget) {
			return "", left, err
		}
		if err == nil {
			budget = left
			if s, ok := out.Value().(string); ok {
				s = strings.TrimSpace(s)
				if len(s) <= maxMessageLength && !strings.Contains(s, "\n") {
					msg = s
				}
			}
		}
	}
	if msg == "" {
		msg = strings.TrimSpace(cv.spec.Message)
	}
	if msg == "" {
		msg = "failed expression: " + strings.TrimSpace(cv.spec.Expression)
	}
	return msg, budget, nil
}
