package registry

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// acceptedAdmissionReviewVersions are the AdmissionReview versions a
// webhook must speak one of.
var acceptedAdmissionReviewVersions = []string{"v1", "v1beta1"}

// maxMatchConditions bounds the matchConditions of a webhook or policy.
const maxMatchConditions = 64

// ValidatingWebhookConfigurations is admissionregistration.k8s.io/v1
// validatingwebhookconfigurations, stored and validated (calling the
// webhooks is the admission chain's business).
func ValidatingWebhookConfigurations() Strategy {
	r := &Resource[*admissionregistrationv1.ValidatingWebhookConfiguration]{
		Meta: Info{
			GVK:      admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingWebhookConfiguration"),
			Resource: "validatingwebhookconfigurations", Singular: "validatingwebhookconfiguration",
			Categories: []string{"api-extensions"},
		},
		NewFunc: func() *admissionregistrationv1.ValidatingWebhookConfiguration {
			return &admissionregistrationv1.ValidatingWebhookConfiguration{}
		},
		NewListFunc: func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfigurationList{} },
		Spec:        func(c *admissionregistrationv1.ValidatingWebhookConfiguration) any { return c.Webhooks },
		Defaults: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			for i := range c.Webhooks {
				h := &c.Webhooks[i]
				defaultWebhook(&h.FailurePolicy, &h.MatchPolicy, &h.NamespaceSelector, &h.ObjectSelector, &h.TimeoutSeconds, &h.ClientConfig, h.Rules)
			}
		},
		ValidateFunc: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) field.ErrorList {
			return validateWebhooks(validatingHooks(c.Webhooks), webhookOptions{noSideEffects: true, knownReviewVersion: true, uniqueNames: true})
		},
	}
	return updateRules[*admissionregistrationv1.ValidatingWebhookConfiguration]{r, func(c, old *admissionregistrationv1.ValidatingWebhookConfiguration) field.ErrorList {
		return validateWebhooks(validatingHooks(c.Webhooks), updateWebhookOptions(validatingHooks(old.Webhooks)))
	}}
}

// MutatingWebhookConfigurations is admissionregistration.k8s.io/v1
// mutatingwebhookconfigurations, stored and validated.
func MutatingWebhookConfigurations() Strategy {
	r := &Resource[*admissionregistrationv1.MutatingWebhookConfiguration]{
		Meta: Info{
			GVK:      admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingWebhookConfiguration"),
			Resource: "mutatingwebhookconfigurations", Singular: "mutatingwebhookconfiguration",
			Categories: []string{"api-extensions"},
		},
		NewFunc: func() *admissionregistrationv1.MutatingWebhookConfiguration {
			return &admissionregistrationv1.MutatingWebhookConfiguration{}
		},
		NewListFunc: func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfigurationList{} },
		Spec:        func(c *admissionregistrationv1.MutatingWebhookConfiguration) any { return c.Webhooks },
		Defaults: func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			for i := range c.Webhooks {
				h := &c.Webhooks[i]
				defaultWebhook(&h.FailurePolicy, &h.MatchPolicy, &h.NamespaceSelector, &h.ObjectSelector, &h.TimeoutSeconds, &h.ClientConfig, h.Rules)
				if h.ReinvocationPolicy == nil {
					h.ReinvocationPolicy = ptr(admissionregistrationv1.NeverReinvocationPolicy)
				}
			}
		},
		ValidateFunc: func(c *admissionregistrationv1.MutatingWebhookConfiguration) field.ErrorList {
			return validateWebhooks(mutatingHooks(c.Webhooks), webhookOptions{noSideEffects: true, knownReviewVersion: true, uniqueNames: true})
		},
	}
	return updateRules[*admissionregistrationv1.MutatingWebhookConfiguration]{r, func(c, old *admissionregistrationv1.MutatingWebhookConfiguration) field.ErrorList {
		return validateWebhooks(mutatingHooks(c.Webhooks), updateWebhookOptions(mutatingHooks(old.Webhooks)))
	}}
}

// updateWebhookOptions are the rules of an update: each create rule holds
// only when the old configuration already kept it.
func updateWebhookOptions(old []webhook) webhookOptions {
	opts := webhookOptions{noSideEffects: true, knownReviewVersion: true, uniqueNames: true}
	names := map[string]bool{}
	for _, h := range old {
		if h.sideEffects == nil || !slices.Contains(noSideEffects, *h.sideEffects) {
			opts.noSideEffects = false
		}
		known := false
		for _, v := range h.admissionReviewVersions {
			known = known || slices.Contains(acceptedAdmissionReviewVersions, v)
		}
		if !known && len(h.admissionReviewVersions) > 0 {
			opts.knownReviewVersion = false
		}
		if names[h.name] {
			opts.uniqueNames = false
		}
		names[h.name] = true
	}
	return opts
}

func defaultWebhook(fp **admissionregistrationv1.FailurePolicyType, mp **admissionregistrationv1.MatchPolicyType, ns, obj **metav1.LabelSelector, timeout **int32, cc *admissionregistrationv1.WebhookClientConfig, rules []admissionregistrationv1.RuleWithOperations) {
	if *fp == nil {
		*fp = ptr(admissionregistrationv1.Fail)
	}
	if *mp == nil {
		*mp = ptr(admissionregistrationv1.Equivalent)
	}
	if *ns == nil {
		*ns = &metav1.LabelSelector{}
	}
	if *obj == nil {
		*obj = &metav1.LabelSelector{}
	}
	if *timeout == nil {
		*timeout = ptr[int32](10)
	}
	if cc.Service != nil && cc.Service.Port == nil {
		cc.Service.Port = ptr[int32](443)
	}
	for i := range rules {
		defaultRuleScope(&rules[i].Rule)
	}
}

func defaultRuleScope(r *admissionregistrationv1.Rule) {
	if r.Scope == nil {
		r.Scope = ptr(admissionregistrationv1.AllScopes)
	}
}

// webhook is what validation reads of a validating or mutating webhook.
type webhook struct {
	name                    string
	clientConfig            admissionregistrationv1.WebhookClientConfig
	rules                   []admissionregistrationv1.RuleWithOperations
	failurePolicy           *admissionregistrationv1.FailurePolicyType
	matchPolicy             *admissionregistrationv1.MatchPolicyType
	namespaceSelector       *metav1.LabelSelector
	objectSelector          *metav1.LabelSelector
	sideEffects             *admissionregistrationv1.SideEffectClass
	timeoutSeconds          *int32
	admissionReviewVersions []string
	matchConditions         []admissionregistrationv1.MatchCondition
	mutating                bool
	reinvocationPolicy      *admissionregistrationv1.ReinvocationPolicyType
}

func validatingHooks(hs []admissionregistrationv1.ValidatingWebhook) []webhook {
	out := make([]webhook, len(hs))
	for i, h := range hs {
		out[i] = webhook{
			name: h.Name, clientConfig: h.ClientConfig, rules: h.Rules, failurePolicy: h.FailurePolicy, matchPolicy: h.MatchPolicy,
			namespaceSelector: h.NamespaceSelector, objectSelector: h.ObjectSelector, sideEffects: h.SideEffects,
			timeoutSeconds: h.TimeoutSeconds, admissionReviewVersions: h.AdmissionReviewVersions, matchConditions: h.MatchConditions,
		}
	}
	return out
}

func mutatingHooks(hs []admissionregistrationv1.MutatingWebhook) []webhook {
	out := make([]webhook, len(hs))
	for i, h := range hs {
		out[i] = webhook{
			name: h.Name, clientConfig: h.ClientConfig, rules: h.Rules, failurePolicy: h.FailurePolicy, matchPolicy: h.MatchPolicy,
			namespaceSelector: h.NamespaceSelector, objectSelector: h.ObjectSelector, sideEffects: h.SideEffects,
			timeoutSeconds: h.TimeoutSeconds, admissionReviewVersions: h.AdmissionReviewVersions, matchConditions: h.MatchConditions,
			mutating: true, reinvocationPolicy: h.ReinvocationPolicy,
		}
	}
	return out
}

// webhookOptions are the rules that apply to new configurations.
type webhookOptions struct {
	noSideEffects      bool
	knownReviewVersion bool
	uniqueNames        bool
}

var (
	failurePolicies   = []admissionregistrationv1.FailurePolicyType{admissionregistrationv1.Fail, admissionregistrationv1.Ignore}
	matchPolicies     = []admissionregistrationv1.MatchPolicyType{admissionregistrationv1.Equivalent, admissionregistrationv1.Exact}
	noSideEffects     = []admissionregistrationv1.SideEffectClass{admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.SideEffectClassNoneOnDryRun}
	reinvocations     = []admissionregistrationv1.ReinvocationPolicyType{admissionregistrationv1.IfNeededReinvocationPolicy, admissionregistrationv1.NeverReinvocationPolicy}
	operations        = []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll, admissionregistrationv1.Connect, admissionregistrationv1.Create, admissionregistrationv1.Delete, admissionregistrationv1.Update}
	scopes            = []admissionregistrationv1.ScopeType{admissionregistrationv1.AllScopes, admissionregistrationv1.ClusterScope, admissionregistrationv1.NamespacedScope}
	allSideEffects    = []admissionregistrationv1.SideEffectClass{admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.SideEffectClassNoneOnDryRun, admissionregistrationv1.SideEffectClassSome, admissionregistrationv1.SideEffectClassUnknown}
	webhookSelectorOK = metav1validation.LabelSelectorValidationOptions{}
)

func validateWebhooks(hooks []webhook, opts webhookOptions) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	for i := range hooks {
		h := &hooks[i]
		at := field.NewPath("webhooks").Index(i)
		errs = append(errs, validateWebhook(h, opts, at)...)
		errs = append(errs, validateAdmissionReviewVersions(h.admissionReviewVersions, opts.knownReviewVersion, at.Child("admissionReviewVersions"))...)
		if opts.uniqueNames && h.name != "" {
			if names[h.name] {
				errs = append(errs, field.Duplicate(at.Child("name"), h.name))
			}
			names[h.name] = true
		}
	}
	return errs
}

func validateWebhook(h *webhook, opts webhookOptions, fld *field.Path) field.ErrorList {
	errs := validation.IsFullyQualifiedName(fld.Child("name"), h.name)
	for i := range h.rules {
		errs = append(errs, validateRuleWithOperations(&h.rules[i], fld.Child("rules").Index(i))...)
	}
	if p := h.failurePolicy; p != nil && !slices.Contains(failurePolicies, *p) {
		errs = append(errs, field.NotSupported(fld.Child("failurePolicy"), *p, failurePolicies))
	}
	if p := h.matchPolicy; p != nil && !slices.Contains(matchPolicies, *p) {
		errs = append(errs, field.NotSupported(fld.Child("matchPolicy"), *p, matchPolicies))
	}
	allowed := allSideEffects
	if opts.noSideEffects {
		allowed = noSideEffects
	}
	if h.sideEffects == nil {
		names := make([]string, len(allowed))
		for i, s := range allowed {
			names[i] = string(s)
		}
		errs = append(errs, field.Required(fld.Child("sideEffects"), "must specify one of "+strings.Join(names, ", ")))
	} else if !slices.Contains(allowed, *h.sideEffects) {
		errs = append(errs, field.NotSupported(fld.Child("sideEffects"), *h.sideEffects, allowed))
	}
	if t := h.timeoutSeconds; t != nil && (*t > 30 || *t < 1) {
		errs = append(errs, field.Invalid(fld.Child("timeoutSeconds"), *t, "the timeout value must be between 1 and 30 seconds"))
	}
	if h.namespaceSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(h.namespaceSelector, webhookSelectorOK, fld.Child("namespaceSelector"))...)
	}
	if h.objectSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(h.objectSelector, webhookSelectorOK, fld.Child("objectSelector"))...)
	}
	if p := h.reinvocationPolicy; h.mutating && p != nil && !slices.Contains(reinvocations, *p) {
		errs = append(errs, field.NotSupported(fld.Child("reinvocationPolicy"), *p, reinvocations))
	}
	cc := h.clientConfig
	switch {
	case (cc.URL == nil) == (cc.Service == nil):
		errs = append(errs, field.Required(fld.Child("clientConfig"), "exactly one of url or service is required"))
	case cc.URL != nil:
		errs = append(errs, validateWebhookURL(*cc.URL, fld.Child("clientConfig", "url"))...)
	default:
		s := cc.Service
		errs = append(errs, validateWebhookService(s.Name, s.Namespace, s.Path, deref(s.Port), fld.Child("clientConfig", "service"))...)
	}
	return append(errs, validateMatchConditions(h.matchConditions, fld.Child("matchConditions"))...)
}

func validateAdmissionReviewVersions(versions []string, requireKnown bool, fld *field.Path) field.ErrorList {
	if len(versions) == 0 {
		return field.ErrorList{field.Required(fld, "must specify one of "+strings.Join(acceptedAdmissionReviewVersions, ", "))}
	}
	var errs field.ErrorList
	seen := map[string]bool{}
	known := false
	for i, v := range versions {
		if seen[v] {
			errs = append(errs, field.Invalid(fld.Index(i), v, "duplicate version"))
			continue
		}
		seen[v] = true
		for _, msg := range validation.IsDNS1035Label(v) {
			errs = append(errs, field.Invalid(fld.Index(i), v, msg))
		}
		known = known || slices.Contains(acceptedAdmissionReviewVersions, v)
	}
	if requireKnown && !known {
		errs = append(errs, field.Invalid(fld, versions, "must include at least one of "+strings.Join(acceptedAdmissionReviewVersions, ", ")))
	}
	return errs
}

// validateWebhookURL checks a webhook's URL: https, a host, and no user,
// fragment or query.
func validateWebhookURL(raw string, fld *field.Path) field.ErrorList {
	const form = "; desired format: https://host[/path]"
	u, err := url.Parse(raw)
	if err != nil {
		return field.ErrorList{field.Required(fld, "url must be a valid URL: "+err.Error()+form)}
	}
	var errs field.ErrorList
	if u.Scheme != "https" {
		errs = append(errs, field.Invalid(fld, u.Scheme, "'https' is the only allowed URL scheme"+form))
	}
	if u.Host == "" {
		errs = append(errs, field.Invalid(fld, u.Host, "host must be specified"+form))
	}
	if u.User != nil {
		errs = append(errs, field.Invalid(fld, u.User.String(), "user information is not permitted in the URL"))
	}
	if u.Fragment != "" {
		errs = append(errs, field.Invalid(fld, u.Fragment, "fragments are not permitted in the URL"))
	}
	if u.RawQuery != "" {
		errs = append(errs, field.Invalid(fld, u.RawQuery, "query parameters are not permitted in the URL"))
	}
	return errs
}

// validateWebhookService checks a webhook's service reference; each
// segment of the path must be a DNS subdomain.
func validateWebhookService(name, namespace string, path *string, port int32, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(fld.Child("name"), "service name is required"))
	}
	if namespace == "" {
		errs = append(errs, field.Required(fld.Child("namespace"), "service namespace is required"))
	}
	if msgs := validation.IsValidPortNum(int(port)); msgs != nil {
		errs = append(errs, field.Invalid(fld.Child("port"), port, "port is not valid: "+strings.Join(msgs, ", ")))
	}
	if path == nil || *path == "" || *path == "/" {
		return errs
	}
	p := *path
	if p == "//" {
		return append(errs, field.Invalid(fld.Child("path"), p, "segment[0] may not be empty"))
	}
	if !strings.HasPrefix(p, "/") {
		errs = append(errs, field.Invalid(fld.Child("path"), p, "must start with a '/'"))
	}
	rest := strings.TrimSuffix(p[1:], "/")
	for i, seg := range strings.Split(rest, "/") {
		if seg == "" {
			errs = append(errs, field.Invalid(fld.Child("path"), p, fmt.Sprintf("segment[%d] may not be empty", i)))
			continue
		}
		for _, msg := range validation.IsDNS1123Subdomain(seg) {
			errs = append(errs, field.Invalid(fld.Child("path"), p, fmt.Sprintf("segment[%d]: %v", i, msg)))
		}
	}
	return errs
}

func validateRuleWithOperations(r *admissionregistrationv1.RuleWithOperations, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	ops := fld.Child("operations")
	if len(r.Operations) == 0 {
		errs = append(errs, field.Required(ops, ""))
	}
	if len(r.Operations) > 1 && slices.Contains(r.Operations, admissionregistrationv1.OperationAll) {
		errs = append(errs, field.Invalid(ops, r.Operations, "if '*' is present, must not specify other operations"))
	}
	for i, op := range r.Operations {
		if !slices.Contains(operations, op) {
			errs = append(errs, field.NotSupported(ops.Index(i), op, operations))
		}
	}
	return append(errs, validateRule(&r.Rule, fld, true)...)
}

func validateRule(r *admissionregistrationv1.Rule, fld *field.Path, allowSubresources bool) field.ErrorList {
	var errs field.ErrorList
	if len(r.APIGroups) == 0 {
		errs = append(errs, field.Required(fld.Child("apiGroups"), ""))
	}
	if len(r.APIGroups) > 1 && slices.Contains(r.APIGroups, "*") {
		errs = append(errs, field.Invalid(fld.Child("apiGroups"), r.APIGroups, "if '*' is present, must not specify other API groups"))
	}
	if len(r.APIVersions) == 0 {
		errs = append(errs, field.Required(fld.Child("apiVersions"), ""))
	}
	if len(r.APIVersions) > 1 && slices.Contains(r.APIVersions, "*") {
		errs = append(errs, field.Invalid(fld.Child("apiVersions"), r.APIVersions, "if '*' is present, must not specify other API versions"))
	}
	for i, v := range r.APIVersions {
		if v == "" {
			errs = append(errs, field.Required(fld.Child("apiVersions").Index(i), ""))
		}
	}
	if allowSubresources {
		errs = append(errs, validateRuleResources(r.Resources, fld.Child("resources"))...)
	} else {
		errs = append(errs, validateRuleResourcesNoSubresources(r.Resources, fld.Child("resources"))...)
	}
	if s := r.Scope; s != nil && !slices.Contains(scopes, *s) {
		errs = append(errs, field.NotSupported(fld.Child("scope"), *s, scopes))
	}
	return errs
}

func validateRuleResources(resources []string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(resources) == 0 {
		errs = append(errs, field.Required(fld, ""))
	}
	wildSub := map[string]bool{} // "x/*" seen
	wildRes := map[string]bool{} // "*/x" seen
	doubleWild, singleWild, plain := false, false, false
	for i, rs := range resources {
		if rs == "" {
			errs = append(errs, field.Required(fld.Index(i), ""))
			continue
		}
		doubleWild = doubleWild || rs == "*/*"
		singleWild = singleWild || rs == "*"
		res, sub, hasSub := strings.Cut(rs, "/")
		if !hasSub {
			plain = rs != "*"
			continue
		}
		if wildSub[res] {
			errs = append(errs, field.Invalid(fld.Index(i), rs, fmt.Sprintf("if '%s/*' is present, must not specify %s", res, rs)))
		}
		if wildRes[sub] {
			errs = append(errs, field.Invalid(fld.Index(i), rs, fmt.Sprintf("if '*/%s' is present, must not specify %s", sub, rs)))
		}
		if sub == "*" {
			wildSub[res] = true
		}
		if res == "*" {
			wildRes[sub] = true
		}
	}
	if len(resources) > 1 && doubleWild {
		errs = append(errs, field.Invalid(fld, resources, "if '*/*' is present, must not specify other resources"))
	}
	if singleWild && plain {
		errs = append(errs, field.Invalid(fld, resources, "if '*' is present, must not specify other resources without subresources"))
	}
	return errs
}

func validateRuleResourcesNoSubresources(resources []string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(resources) == 0 {
		errs = append(errs, field.Required(fld, ""))
	}
	for i, r := range resources {
		if r == "" {
			errs = append(errs, field.Required(fld.Index(i), ""))
		}
		if strings.Contains(r, "/") {
			errs = append(errs, field.Invalid(fld.Index(i), r, "must not specify subresources"))
		}
	}
	if len(resources) > 1 && slices.Contains(resources, "*") {
		errs = append(errs, field.Invalid(fld, resources, "if '*' is present, must not specify other resources"))
	}
	return errs
}

// validateMatchConditions checks a webhook's match conditions, compiled
// with the variables webhooks see.
func validateMatchConditions(conds []admissionregistrationv1.MatchCondition, fld *field.Path) field.ErrorList {
	return validatePolicyMatchConditions(conds, admissionVarsWebhook, fld)
}
