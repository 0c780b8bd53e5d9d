package webhook

import (
	"context"
	"errors"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kplane/kplane/pkg/admission"
)

// defaultTimeout is a webhook's timeoutSeconds when it sets none, as the
// admissionregistration.k8s.io/v1 default.
const defaultTimeout = 10 * time.Second

// hook is one webhook of a configuration, compiled: selectors parsed,
// matchConditions compiled, client built. Immutable once built; shared by
// concurrent requests.
type hook struct {
	// uid names the hook in its snapshot: configuration name and index.
	uid           string
	configuration string
	name          string
	rules         []admissionregistrationv1.RuleWithOperations
	matchPolicy   *admissionregistrationv1.MatchPolicyType
	failOpen      bool // failurePolicy Ignore
	sideEffects   *admissionregistrationv1.SideEffectClass
	timeout       time.Duration
	versions      []string // admissionReviewVersions
	reinvoke      bool     // reinvocationPolicy IfNeeded

	namespaceSelector labels.Selector
	namespaceErr      error
	objectSelector    labels.Selector
	objectErr         error

	hasConditions bool
	conditions    admission.ConditionMatcher
	conditionsErr error

	client    *client
	clientErr error
}

// spec is what mutating and validating webhooks have in common.
type spec struct {
	name              string
	clientConfig      admissionregistrationv1.WebhookClientConfig
	rules             []admissionregistrationv1.RuleWithOperations
	failurePolicy     *admissionregistrationv1.FailurePolicyType
	matchPolicy       *admissionregistrationv1.MatchPolicyType
	namespaceSelector *metav1.LabelSelector
	objectSelector    *metav1.LabelSelector
	sideEffects       *admissionregistrationv1.SideEffectClass
	timeoutSeconds    *int32
	versions          []string
	reinvocation      *admissionregistrationv1.ReinvocationPolicyType
	matchConditions   []admissionregistrationv1.MatchCondition
}

// compileHook builds a hook. Problems of the configuration do not fail
// the compilation: they are kept and decided when a request matches, as
// Kubernetes does (a bad selector is an internal error, a bad condition
// or client config a failure its failurePolicy decides).
func (p *plugin) compileHook(configuration string, index int, s spec) *hook {
	h := &hook{
		uid:           fmt.Sprintf("%s/%d", configuration, index),
		configuration: configuration,
		name:          s.name,
		rules:         s.rules,
		matchPolicy:   s.matchPolicy,
		failOpen:      s.failurePolicy != nil && *s.failurePolicy == admissionregistrationv1.Ignore,
		sideEffects:   s.sideEffects,
		timeout:       defaultTimeout,
		versions:      s.versions,
		reinvoke:      s.reinvocation != nil && *s.reinvocation == admissionregistrationv1.IfNeededReinvocationPolicy,
	}
	if s.timeoutSeconds != nil {
		h.timeout = time.Duration(*s.timeoutSeconds) * time.Second
	}
	h.namespaceSelector, h.namespaceErr = selector(s.namespaceSelector)
	h.objectSelector, h.objectErr = selector(s.objectSelector)
	if len(s.matchConditions) > 0 {
		h.hasConditions = true
		if p.conditions == nil {
			h.conditionsErr = errors.New("matchConditions cannot be evaluated: the server has no expression compiler")
		} else {
			h.conditions, h.conditionsErr = p.conditions(s.matchConditions)
		}
	}
	h.client, h.clientErr = p.clientFor(s.name, s.clientConfig)
	return h
}

func selector(ls *metav1.LabelSelector) (labels.Selector, error) {
	if ls == nil {
		return labels.Everything(), nil
	}
	return metav1.LabelSelectorAsSelector(ls)
}

// call is a request as one hook sees it.
type call struct {
	hook *hook
	inv  admission.Invocation
	// index is the hook's place in Kubernetes' audit annotation keys.
	index int
}

// match decides whether h is called for a, as Kubernetes' ShouldCallHook:
// rules (with matchPolicy), then object and namespace selectors, then
// matchConditions evaluated on the objects as the webhook would receive
// them. It returns the error the request fails with when one of these
// cannot be decided.
func (p *plugin) match(ctx context.Context, h *hook, a *admission.Attributes, views *viewCache) (admission.Invocation, bool, error) {
	inv, ok := matchRules(a, h.rules, h.matchPolicy, views)
	if !ok {
		return inv, false, nil
	}
	objectOK := h.objectErr == nil && admission.MatchObjectSelector(h.objectSelector, a)
	if h.objectErr == nil && !objectOK {
		return inv, false, nil
	}
	var nsErr error
	if h.namespaceErr != nil {
		nsErr = apierrors.NewInternalError(h.namespaceErr)
	} else {
		nsOK, err := admission.MatchNamespaceSelector(ctx, p.src, h.namespaceSelector, a)
		switch {
		case apierrors.IsNotFound(err):
			nsErr = err
		case err != nil:
			nsErr = apierrors.NewInternalError(err)
		case !nsOK:
			return inv, false, nil
		}
	}
	if nsErr != nil {
		return inv, false, nsErr
	}
	if h.objectErr != nil {
		return inv, false, apierrors.NewInternalError(h.objectErr)
	}
	if !h.hasConditions {
		return inv, true, nil
	}
	err := h.conditionsErr
	if err == nil {
		var v *view
		if v, err = views.get(a, inv.Kind); err != nil {
			return inv, false, err
		}
		var matched bool
		matched, _, err = h.conditions.Match(ctx, a, v.object, v.oldObject, newRequest(a, inv, v, ""))
		if err == nil && !matched {
			return inv, false, nil
		}
	}
	if err != nil {
		if h.failOpen {
			p.logger.Warn("failed evaluating match conditions, failing open", "webhook", h.name, "err", err)
			return inv, false, nil
		}
		return inv, false, apierrors.NewForbidden(a.Resource.GroupResource(), a.Name, err)
	}
	return inv, true, nil
}

// matchRules is admission.MatchRules with the equivalent resources asked
// once per request: the first rule covering a's resource, else (matchPolicy
// Equivalent) the first rule covering one of its equivalents, in order.
func matchRules(a *admission.Attributes, rules []admissionregistrationv1.RuleWithOperations, policy *admissionregistrationv1.MatchPolicyType, views *viewCache) (admission.Invocation, bool) {
	if inv, ok := admission.MatchRules(a, rules, nil); ok {
		return inv, true
	}
	if policy == nil || *policy != admissionregistrationv1.Equivalent || a.Objects == nil {
		return admission.Invocation{}, false
	}
	equivalents := views.equivalentsOf(a)
	for _, r := range rules {
		for _, e := range equivalents {
			if e.Resource != a.Resource && admission.RuleMatches(r, a, e.Resource) {
				return admission.Invocation{Resource: e.Resource, Subresource: a.Subresource, Kind: e.Kind}, true
			}
		}
	}
	return admission.Invocation{}, false
}

// dryRunError is why h cannot be called for a dry-run request (nil if it
// can): only webhooks declaring sideEffects None or NoneOnDryRun can.
func (h *hook) dryRunError() error {
	if h.sideEffects == nil {
		//lint:ignore ST1005 Kubernetes' wording
		return &callError{webhook: h.name, reason: errors.New("Webhook SideEffects is nil"), status: apierrors.NewBadRequest("Webhook SideEffects is nil")}
	}
	if s := *h.sideEffects; s != admissionregistrationv1.SideEffectClassNone && s != admissionregistrationv1.SideEffectClassNoneOnDryRun {
		return dryRunUnsupported(h.name)
	}
	return nil
}
