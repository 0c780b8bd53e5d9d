package registry

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/google/cel-go/cel"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The limits Kubernetes puts on admission policies.
const (
	maxAuditAnnotations                     = 20
	maxAuditAnnotationValueExpressionLength = 5 * 1024
)

// ValidatingAdmissionPolicies is admissionregistration.k8s.io/v1
// validatingadmissionpolicies: a status subresource (the type checking
// results), expressions compiled with the project's CEL environment.
func ValidatingAdmissionPolicies() Strategy {
	return &Resource[*admissionregistrationv1.ValidatingAdmissionPolicy]{
		Meta: Info{
			GVK:      admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicy"),
			Resource: "validatingadmissionpolicies", Singular: "validatingadmissionpolicy",
			Categories: []string{"api-extensions"}, Status: true,
		},
		NewFunc: func() *admissionregistrationv1.ValidatingAdmissionPolicy {
			return &admissionregistrationv1.ValidatingAdmissionPolicy{}
		},
		NewListFunc: func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyList{} },
		Spec:        func(p *admissionregistrationv1.ValidatingAdmissionPolicy) any { return p.Spec },
		CopyStatus: func(dst, src *admissionregistrationv1.ValidatingAdmissionPolicy) {
			dst.Status = src.Status
		},
		ResetForStatus: func(p, old *admissionregistrationv1.ValidatingAdmissionPolicy) { p.Spec = old.Spec },
		ResetStatus: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Status = admissionregistrationv1.ValidatingAdmissionPolicyStatus{}
		},
		Defaults: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			if p.Spec.FailurePolicy == nil {
				p.Spec.FailurePolicy = ptr(admissionregistrationv1.Fail)
			}
			defaultMatchResources(p.Spec.MatchConstraints)
		},
		ValidateFunc: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) field.ErrorList {
			return validateValidatingPolicy(p)
		},
		ValidateUpdateFunc: func(p, _ *admissionregistrationv1.ValidatingAdmissionPolicy) field.ErrorList {
			return validatePolicyStatus(&p.Status)
		},
	}
}

// ValidatingAdmissionPolicyBindings is admissionregistration.k8s.io/v1
// validatingadmissionpolicybindings.
func ValidatingAdmissionPolicyBindings() Strategy {
	return &Resource[*admissionregistrationv1.ValidatingAdmissionPolicyBinding]{
		Meta: Info{
			GVK:      admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicyBinding"),
			Resource: "validatingadmissionpolicybindings", Singular: "validatingadmissionpolicybinding",
			Categories: []string{"api-extensions"},
		},
		NewFunc: func() *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
			return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		},
		NewListFunc: func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyBindingList{} },
		Spec:        func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) any { return b.Spec },
		Defaults: func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			defaultMatchResources(b.Spec.MatchResources)
			defaultParamRef(b.Spec.ParamRef)
		},
		ValidateFunc: func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) field.ErrorList {
			spec := field.NewPath("spec")
			errs := validatePolicyName(b.Spec.PolicyName, spec.Child("policyName"))
			errs = append(errs, validateParamRef(b.Spec.ParamRef, spec.Child("paramRef"))...)
			errs = append(errs, validateMatchResources(b.Spec.MatchResources, spec.Child("matchResources"))...)
			return append(errs, validateValidationActions(b.Spec.ValidationActions, spec.Child("validationActions"))...)
		},
	}
}

// MutatingAdmissionPolicies is admissionregistration.k8s.io/v1
// mutatingadmissionpolicies.
func MutatingAdmissionPolicies() Strategy {
	return &Resource[*admissionregistrationv1.MutatingAdmissionPolicy]{
		Meta: Info{
			GVK:      admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingAdmissionPolicy"),
			Resource: "mutatingadmissionpolicies", Singular: "mutatingadmissionpolicy",
			Categories: []string{"api-extensions"},
		},
		NewFunc: func() *admissionregistrationv1.MutatingAdmissionPolicy {
			return &admissionregistrationv1.MutatingAdmissionPolicy{}
		},
		NewListFunc: func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicyList{} },
		Spec:        func(p *admissionregistrationv1.MutatingAdmissionPolicy) any { return p.Spec },
		Defaults: func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
			if p.Spec.FailurePolicy == nil {
				p.Spec.FailurePolicy = ptr(admissionregistrationv1.Fail)
			}
			defaultMatchResources(p.Spec.MatchConstraints)
		},
		ValidateFunc: validateMutatingPolicy,
	}
}

// MutatingAdmissionPolicyBindings is admissionregistration.k8s.io/v1
// mutatingadmissionpolicybindings.
func MutatingAdmissionPolicyBindings() Strategy {
	return &Resource[*admissionregistrationv1.MutatingAdmissionPolicyBinding]{
		Meta: Info{
			GVK:      admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingAdmissionPolicyBinding"),
			Resource: "mutatingadmissionpolicybindings", Singular: "mutatingadmissionpolicybinding",
			Categories: []string{"api-extensions"},
		},
		NewFunc: func() *admissionregistrationv1.MutatingAdmissionPolicyBinding {
			return &admissionregistrationv1.MutatingAdmissionPolicyBinding{}
		},
		NewListFunc: func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicyBindingList{} },
		Spec:        func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) any { return b.Spec },
		Defaults: func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
			defaultMatchResources(b.Spec.MatchResources)
			defaultParamRef(b.Spec.ParamRef)
		},
		ValidateFunc: func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) field.ErrorList {
			spec := field.NewPath("spec")
			errs := validatePolicyName(b.Spec.PolicyName, spec.Child("policyName"))
			errs = append(errs, validateParamRef(b.Spec.ParamRef, spec.Child("paramRef"))...)
			return append(errs, validateMatchResources(b.Spec.MatchResources, spec.Child("matchResources"))...)
		},
	}
}

func defaultMatchResources(m *admissionregistrationv1.MatchResources) {
	if m == nil {
		return
	}
	if m.MatchPolicy == nil {
		m.MatchPolicy = ptr(admissionregistrationv1.Equivalent)
	}
	if m.NamespaceSelector == nil {
		m.NamespaceSelector = &metav1.LabelSelector{}
	}
	if m.ObjectSelector == nil {
		m.ObjectSelector = &metav1.LabelSelector{}
	}
	for i := range m.ResourceRules {
		defaultRuleScope(&m.ResourceRules[i].Rule)
	}
	for i := range m.ExcludeResourceRules {
		defaultRuleScope(&m.ExcludeResourceRules[i].Rule)
	}
}

func defaultParamRef(r *admissionregistrationv1.ParamRef) {
	if r != nil && r.ParameterNotFoundAction == nil {
		r.ParameterNotFoundAction = ptr(admissionregistrationv1.DenyAction)
	}
}

func validatePolicyName(name string, fld *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fld, "")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(fld, name, msg))
	}
	return errs
}

// policyVars are the CEL variables of a policy's expressions.
func policyVars(paramKind *admissionregistrationv1.ParamKind) admissionVars {
	if paramKind != nil {
		return admissionVarsPolicyParams
	}
	return admissionVarsPolicy
}

// policyCommon checks what validating and mutating policies share:
// failurePolicy, paramKind, matchConstraints, matchConditions, variables.
func policyCommon(fp *admissionregistrationv1.FailurePolicyType, paramKind *admissionregistrationv1.ParamKind, mc *admissionregistrationv1.MatchResources,
	conds []admissionregistrationv1.MatchCondition, vars []admissionregistrationv1.Variable, spec *field.Path) field.ErrorList {
	var errs field.ErrorList
	if fp == nil {
		errs = append(errs, field.Required(spec.Child("failurePolicy"), ""))
	} else if !slices.Contains(failurePolicies, *fp) {
		errs = append(errs, field.NotSupported(spec.Child("failurePolicy"), *fp, failurePolicies))
	}
	if paramKind != nil {
		errs = append(errs, validateParamKind(*paramKind, spec.Child("paramKind"))...)
	}
	if mc == nil {
		errs = append(errs, field.Required(spec.Child("matchConstraints"), ""))
	} else {
		errs = append(errs, validateMatchResources(mc, spec.Child("matchConstraints"))...)
		if len(mc.ResourceRules) == 0 {
			errs = append(errs, field.Required(spec.Child("matchConstraints", "resourceRules"), ""))
		}
	}
	errs = append(errs, validatePolicyMatchConditions(conds, policyVars(paramKind), spec.Child("matchConditions"))...)
	for i, v := range vars {
		at := spec.Child("variables").Index(i)
		if strings.TrimSpace(v.Name) == "" {
			errs = append(errs, field.Required(at.Child("name"), "name is not specified"))
		} else if !isCELIdentifier(v.Name) {
			errs = append(errs, field.Invalid(at.Child("name"), v.Name, "name is not a valid CEL identifier"))
		}
		if strings.TrimSpace(v.Expression) == "" {
			errs = append(errs, field.Required(at.Child("expression"), "expression is not specified"))
		} else {
			errs = append(errs, compileAdmissionExpressionType(v.Expression, policyVars(paramKind), nil, at.Child("expression"))...)
		}
	}
	return errs
}

// validatePolicyMatchConditions checks match conditions (at most 64, named
// uniquely with qualified names) and compiles them with vars.
func validatePolicyMatchConditions(conds []admissionregistrationv1.MatchCondition, vars admissionVars, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(conds) > maxMatchConditions {
		errs = append(errs, field.TooMany(fld, len(conds), maxMatchConditions))
	}
	names := map[string]bool{}
	for i, c := range conds {
		at := fld.Index(i)
		if expr := strings.TrimSpace(c.Expression); expr == "" {
			errs = append(errs, field.Required(at.Child("expression"), ""))
		} else {
			errs = append(errs, compileAdmissionExpression(expr, vars, true, at.Child("expression"))...)
		}
		if c.Name == "" {
			errs = append(errs, field.Required(at.Child("name"), ""))
		} else {
			errs = append(errs, validateQualifiedName(c.Name, at.Child("name"))...)
			if names[c.Name] {
				errs = append(errs, field.Duplicate(at.Child("name"), c.Name))
			}
			names[c.Name] = true
		}
	}
	return errs
}

var validationReasons = []metav1.StatusReason{
	metav1.StatusReasonForbidden, metav1.StatusReasonInvalid, metav1.StatusReasonRequestEntityTooLarge, metav1.StatusReasonUnauthorized,
}

var newlines = regexp.MustCompile(`[\n\r]+`)

func validateValidatingPolicy(p *admissionregistrationv1.ValidatingAdmissionPolicy) field.ErrorList {
	spec := field.NewPath("spec")
	s := &p.Spec
	vars := policyVars(s.ParamKind)
	errs := policyCommon(s.FailurePolicy, s.ParamKind, s.MatchConstraints, s.MatchConditions, s.Variables, spec)
	if len(s.Validations) == 0 && len(s.AuditAnnotations) == 0 {
		const msg = "validations or auditAnnotations must contain at least one item"
		return append(errs, field.Required(spec.Child("validations"), msg), field.Required(spec.Child("auditAnnotations"), msg))
	}
	for i, v := range s.Validations {
		at := spec.Child("validations").Index(i)
		if strings.TrimSpace(v.Expression) == "" {
			errs = append(errs, field.Required(at.Child("expression"), "expression is not specified"))
		} else {
			errs = append(errs, compileAdmissionExpression(v.Expression, vars, true, at.Child("expression"))...)
		}
		trimmedME := strings.TrimSpace(v.MessageExpression)
		if v.MessageExpression != "" && trimmedME == "" {
			errs = append(errs, field.Invalid(at.Child("messageExpression"), v.MessageExpression, "must be non-empty if specified"))
		} else if trimmedME != "" {
			errs = append(errs, compileAdmissionExpressionType(v.MessageExpression, vars, cel.StringType, at.Child("messageExpression"))...)
		}
		trimmedMsg := strings.TrimSpace(v.Message)
		if v.Message != "" && trimmedMsg == "" {
			errs = append(errs, field.Invalid(at.Child("message"), v.Message, "message must be non-empty if specified"))
		} else if newlines.MatchString(trimmedMsg) {
			errs = append(errs, field.Invalid(at.Child("message"), v.Message, "message must not contain line breaks"))
		}
		if r := v.Reason; r != nil && !slices.Contains(validationReasons, *r) {
			errs = append(errs, field.NotSupported(at.Child("reason"), *r, validationReasons))
		}
	}
	if s.AuditAnnotations != nil {
		if len(s.AuditAnnotations) > maxAuditAnnotations {
			errs = append(errs, field.Invalid(spec.Child("auditAnnotations"), s.AuditAnnotations, fmt.Sprintf("must not have more than %d auditAnnotations", maxAuditAnnotations)))
		}
		keys := map[string]bool{}
		for i, a := range s.AuditAnnotations {
			at := spec.Child("auditAnnotations").Index(i)
			if p.Name != "" {
				errs = append(errs, validateQualifiedName(p.Name+"/"+a.Key, at.Child("key"))...)
			} else {
				errs = append(errs, field.Invalid(at.Child("key"), a.Key, "requires metadata.name be non-empty"))
			}
			switch ve := strings.TrimSpace(a.ValueExpression); {
			case ve == "":
				errs = append(errs, field.Required(at.Child("valueExpression"), "valueExpression is not specified"))
			case len(ve) > maxAuditAnnotationValueExpressionLength:
				errs = append(errs, field.Required(at.Child("valueExpression"), fmt.Sprintf("must not exceed %d bytes in length", maxAuditAnnotationValueExpressionLength)))
			default:
				errs = append(errs, compileAdmissionExpressionType(ve, vars, nil, at.Child("valueExpression"))...)
			}
			if keys[a.Key] {
				errs = append(errs, field.Duplicate(at.Child("key"), a.Key))
			}
			keys[a.Key] = true
		}
	}
	return errs
}

func validatePolicyStatus(st *admissionregistrationv1.ValidatingAdmissionPolicyStatus) field.ErrorList {
	status := field.NewPath("status")
	var errs field.ErrorList
	if tc := st.TypeChecking; tc != nil {
		for i, w := range tc.ExpressionWarnings {
			at := status.Child("typeChecking", "expressionWarnings").Index(i)
			if w.Warning == "" {
				errs = append(errs, field.Required(at.Child("warning"), ""))
			}
			if strings.TrimSpace(w.FieldRef) == "" {
				errs = append(errs, field.Required(at.Child("fieldRef"), ""))
			}
		}
	}
	return append(errs, metav1validation.ValidateConditions(st.Conditions, status.Child("conditions"))...)
}

func validateMutatingPolicy(p *admissionregistrationv1.MutatingAdmissionPolicy) field.ErrorList {
	spec := field.NewPath("spec")
	s := &p.Spec
	errs := policyCommon(s.FailurePolicy, s.ParamKind, s.MatchConstraints, s.MatchConditions, s.Variables, spec)
	if len(s.Mutations) == 0 {
		errs = append(errs, field.Required(spec.Child("mutations"), "mutations must contain at least one item"))
	}
	for i, m := range s.Mutations {
		at := spec.Child("mutations").Index(i)
		switch m.PatchType {
		case admissionregistrationv1.PatchTypeApplyConfiguration:
			if m.ApplyConfiguration == nil {
				errs = append(errs, field.Required(at.Child("applyConfiguration"), "applyConfiguration field is required when patchType is 'ApplyConfiguration'"))
			} else if strings.TrimSpace(m.ApplyConfiguration.Expression) == "" {
				errs = append(errs, field.Required(at.Child("applyConfiguration", "expression"), "expression is not specified"))
			} else {
				errs = append(errs, parseAdmissionExpression(m.ApplyConfiguration.Expression, at.Child("applyConfiguration", "expression"))...)
			}
			if m.JSONPatch != nil {
				errs = append(errs, field.Forbidden(at.Child("jsonPatch"), "must not be specified when patchType is ApplyConfiguration"))
			}
		case admissionregistrationv1.PatchTypeJSONPatch:
			if m.JSONPatch == nil {
				errs = append(errs, field.Required(at.Child("jsonPatch"), "jsonPatch field is required when patchType is 'JSONPatch'"))
			} else if strings.TrimSpace(m.JSONPatch.Expression) == "" {
				errs = append(errs, field.Required(at.Child("jsonPatch", "expression"), "expression is not specified"))
			} else {
				errs = append(errs, parseAdmissionExpression(m.JSONPatch.Expression, at.Child("jsonPatch", "expression"))...)
			}
			if m.ApplyConfiguration != nil {
				errs = append(errs, field.Forbidden(at.Child("applyConfiguration"), "must not be specified when patchType is JSONPatch"))
			}
		default:
			errs = append(errs, field.NotSupported(at.Child("patchType"), m.PatchType, []admissionregistrationv1.PatchType{admissionregistrationv1.PatchTypeApplyConfiguration, admissionregistrationv1.PatchTypeJSONPatch}))
		}
	}
	if r := s.ReinvocationPolicy; r == "" {
		errs = append(errs, field.Required(spec.Child("reinvocationPolicy"), ""))
	} else if !slices.Contains(reinvocations, r) {
		errs = append(errs, field.NotSupported(spec.Child("reinvocationPolicy"), r, reinvocations))
	}
	return errs
}

func validateParamKind(pk admissionregistrationv1.ParamKind, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	av := fld.Child("apiVersion")
	switch {
	case pk.APIVersion == "":
		errs = append(errs, field.Required(av, ""))
	case strings.Count(pk.APIVersion, "/") > 1:
		errs = append(errs, field.Invalid(av, pk.APIVersion, fmt.Sprintf("unexpected GroupVersion string: %v", pk.APIVersion)))
	default:
		group, version, found := strings.Cut(pk.APIVersion, "/")
		if !found {
			group, version = "", pk.APIVersion
		}
		if group != "" {
			if msgs := validation.IsDNS1123Subdomain(group); len(msgs) > 0 {
				errs = append(errs, field.Invalid(av, group, strings.Join(msgs, ",")))
			}
		}
		if version == "" {
			errs = append(errs, field.Invalid(av, pk.APIVersion, "version must be specified"))
		} else if msgs := validation.IsDNS1035Label(version); len(msgs) > 0 {
			errs = append(errs, field.Invalid(av, version, strings.Join(msgs, ",")))
		}
	}
	if pk.Kind == "" {
		errs = append(errs, field.Required(fld.Child("kind"), ""))
	} else if msgs := validation.IsDNS1035Label(strings.ToLower(pk.Kind)); len(msgs) > 0 {
		errs = append(errs, field.Invalid(fld.Child("kind"), pk.Kind, "may have mixed case, but should otherwise match: "+strings.Join(msgs, ",")))
	}
	return errs
}

func validateMatchResources(mc *admissionregistrationv1.MatchResources, fld *field.Path) field.ErrorList {
	if mc == nil {
		return nil
	}
	var errs field.ErrorList
	if mc.MatchPolicy == nil {
		errs = append(errs, field.Required(fld.Child("matchPolicy"), ""))
	} else if !slices.Contains(matchPolicies, *mc.MatchPolicy) {
		errs = append(errs, field.NotSupported(fld.Child("matchPolicy"), *mc.MatchPolicy, matchPolicies))
	}
	if mc.NamespaceSelector == nil {
		errs = append(errs, field.Required(fld.Child("namespaceSelector"), ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(mc.NamespaceSelector, webhookSelectorOK, fld.Child("namespaceSelector"))...)
	}
	if mc.ObjectSelector == nil {
		errs = append(errs, field.Required(fld.Child("objectSelector"), ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(mc.ObjectSelector, webhookSelectorOK, fld.Child("objectSelector"))...)
	}
	for i := range mc.ResourceRules {
		errs = append(errs, validateNamedRule(&mc.ResourceRules[i], fld.Child("resourceRules").Index(i))...)
	}
	for i := range mc.ExcludeResourceRules {
		errs = append(errs, validateNamedRule(&mc.ExcludeResourceRules[i], fld.Child("excludeResourceRules").Index(i))...)
	}
	return errs
}

func validateNamedRule(r *admissionregistrationv1.NamedRuleWithOperations, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, n := range r.ResourceNames {
		for _, msg := range pathSegmentName(n, false) {
			errs = append(errs, field.Invalid(fld.Child("resourceNames").Index(i), n, msg))
		}
		if seen[n] {
			errs = append(errs, field.Duplicate(fld.Child("resourceNames").Index(i), n))
		}
		seen[n] = true
	}
	return append(errs, validateRuleWithOperations(&r.RuleWithOperations, fld)...)
}

var validationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit, admissionregistrationv1.Deny, admissionregistrationv1.Warn}

func validateValidationActions(actions []admissionregistrationv1.ValidationAction, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[admissionregistrationv1.ValidationAction]bool{}
	for i, a := range actions {
		if !slices.Contains(validationActions, a) {
			errs = append(errs, field.NotSupported(fld.Index(i), a, validationActions))
		}
		if seen[a] {
			errs = append(errs, field.Duplicate(fld.Index(i), a))
		}
		seen[a] = true
	}
	if seen[admissionregistrationv1.Deny] && seen[admissionregistrationv1.Warn] {
		errs = append(errs, field.Invalid(fld, actions, "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"))
	}
	if len(seen) == 0 {
		errs = append(errs, field.Required(fld, "at least one validation action is required"))
	}
	return errs
}

func validateParamRef(pr *admissionregistrationv1.ParamRef, fld *field.Path) field.ErrorList {
	if pr == nil {
		return nil
	}
	var errs field.ErrorList
	const exclusive = "name and selector are mutually exclusive"
	if pr.Name != "" {
		for _, msg := range pathSegmentName(pr.Name, false) {
			errs = append(errs, field.Invalid(fld.Child("name"), pr.Name, msg))
		}
		if pr.Selector != nil {
			errs = append(errs, field.Forbidden(fld.Child("name"), exclusive))
		}
	}
	if pr.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(pr.Selector, webhookSelectorOK, fld.Child("selector"))...)
		if pr.Name != "" {
			errs = append(errs, field.Forbidden(fld.Child("selector"), exclusive))
		}
	}
	if pr.Name == "" && pr.Selector == nil {
		errs = append(errs, field.Required(fld, "one of name or selector must be specified"))
	}
	actions := []admissionregistrationv1.ParameterNotFoundActionType{admissionregistrationv1.DenyAction, admissionregistrationv1.AllowAction}
	if a := pr.ParameterNotFoundAction; a == nil || *a == "" {
		errs = append(errs, field.Required(fld.Child("parameterNotFoundAction"), ""))
	} else if !slices.Contains(actions, *a) {
		errs = append(errs, field.NotSupported(fld.Child("parameterNotFoundAction"), *a, actions))
	}
	return errs
}

var (
	celIdentifier = regexp.MustCompile(`^[_a-zA-Z][_a-zA-Z0-9]*$`)
	celReserved   = []string{
		"true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function",
		"if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while",
	}
)

func isCELIdentifier(name string) bool {
	return celIdentifier.MatchString(name) && !slices.Contains(celReserved, name)
}
