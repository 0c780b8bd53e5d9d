package policy

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/kplane/kplane/pkg/admission"
)

// The resources the plugin reads.
var (
	policiesResource = admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicies")
	bindingsResource = admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicybindings")
)

// Validating is the ValidatingAdmissionPolicy plugin. It is safe for
// concurrent use.
type Validating struct {
	*engine
	metrics *metrics
	set     *hookSet[*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding, *compiled]
}

// validatingHook is a ValidatingAdmissionPolicy with its bindings.
type validatingHook = hook[*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding, *compiled]

var _ admission.ValidationInterface = (*Validating)(nil)

// NewValidating returns the ValidatingAdmissionPolicy plugin
// (admissionregistration.k8s.io/v1 policies and bindings, read from
// cfg.Source). cfg.Source is required; a nil cfg.Authorizer allows every
// authorizer check; a nil cfg.Resolver makes every paramKind unknown; a
// nil cfg.Logger discards; cfg.Metrics, when set, gets Kubernetes'
// apiserver_validating_admission_policy_check_total and
// check_duration_seconds (timed with cfg.Clock, the real clock by
// default).
func NewValidating(cfg *admission.Config) (admission.Interface, error) {
	e, err := newEngine(cfg, admission.ValidatingAdmissionPolicy)
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Metrics)
	if err != nil {
		return nil, err
	}
	v := &Validating{engine: e, metrics: m}
	v.set = &hookSet[*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding, *compiled]{e: e, kind: kind[*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding, *compiled]{
		policies: policiesResource,
		bindings: bindingsResource,
		policy: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) policyMeta {
			return policyMeta{name: p.Name, resourceVersion: p.ResourceVersion, matchConstraints: p.Spec.MatchConstraints, paramKind: p.Spec.ParamKind}
		},
		binding: func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) bindingMeta {
			return bindingMeta{name: b.Name, policyName: b.Spec.PolicyName, matchResources: b.Spec.MatchResources, paramRef: b.Spec.ParamRef}
		},
		compile: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) *compiled { return compile(&p.Spec) },
	}}
	return v, nil
}

// Handles reports true: policies may match any operation.
func (v *Validating) Handles(admission.Operation) bool { return true }
