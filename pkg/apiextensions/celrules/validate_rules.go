package celrules

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/google/cel-go/cel"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kcel "github.com/kplane/kplane/pkg/cel"
)

// Static cost limits of rules, in CEL cost units.
const (
	// StaticEstimatedCostLimit bounds the estimated cost of one rule (or
	// messageExpression), multiplied by how many times it can run.
	StaticEstimatedCostLimit = 10000000
	// StaticEstimatedCRDCostLimit bounds the sum of those over a schema.
	StaticEstimatedCRDCostLimit = 100000000
)

var supportedReasons = []string{
	string(apiextensionsv1.FieldValueDuplicate),
	string(apiextensionsv1.FieldValueForbidden),
	string(apiextensionsv1.FieldValueInvalid),
	string(apiextensionsv1.FieldValueRequired),
}

var newlines = regexp.MustCompile(`[\n\r]+`)

// ValidateRules checks the x-kubernetes-validations rules of a CRD version's
// schema s, found at fldPath (such as
// spec.versions[0].schema.openAPIV3Schema), and returns the errors
// kube-apiserver gives when such a CRD is written: missing rules, bad
// messages, reasons and fieldPaths, compile errors, rules and messages that do
// not return a bool and a string, estimated costs over the per-rule and
// per-schema budgets, oldSelf where old values cannot be correlated, and
// optionalOldSelf on rules that do not use oldSelf. Rules inside allOf, anyOf,
// oneOf and not are not checked.
//
// As in kube-apiserver, the CEL checks of a schema node are skipped when it
// or a node below it has one of the other errors.
func ValidateRules(fldPath *field.Path, s *apiextensionsv1.JSONSchemaProps) field.ErrorList {
	if s == nil || !hasRules(s) {
		return nil
	}
	base, err := kcel.NewBaseEnv()
	if err != nil {
		return field.ErrorList{field.InternalError(fldPath, fmt.Errorf("building the CEL environment: %w", err))}
	}
	one := uint64(1)
	v := &ruleChecker{base: base, total: &totalCost{}}
	root := kcel.SchemaDeclType(rootTypeName, s, true)
	schemaErrs, celErrs := v.check(fldPath, s, root, &one, nil)
	errs := append(schemaErrs, celErrs...)
	if v.total.total > StaticEstimatedCRDCostLimit {
		for _, e := range v.total.mostExpensive {
			errs = append(errs, field.Forbidden(e.path, "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"))
		}
		errs = append(errs, field.Forbidden(fldPath, costErrorMessage("x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema", v.total.total, StaticEstimatedCRDCostLimit)))
	}
	return errs
}

type ruleChecker struct {
	base  *cel.Env
	total *totalCost
}

// check validates the rules of s and below. t is the CEL type of s (nil if it
// has none), cardinality how often s can occur in an object (nil: without
// bound), uncorrelatable the highest path above s where old values cannot be
// correlated (nil: none). It returns the schema errors and the CEL errors
// separately, as kube-apiserver orders them.
func (v *ruleChecker) check(fldPath *field.Path, s *apiextensionsv1.JSONSchemaProps, t *kcel.DeclType, cardinality *uint64, uncorrelatable *field.Path) (schemaErrs, celErrs field.ErrorList) {
	if s == nil {
		return nil, nil
	}
	add := func(se, ce field.ErrorList) {
		schemaErrs = append(schemaErrs, se...)
		celErrs = append(celErrs, ce...)
	}
	if ap := s.AdditionalProperties; ap != nil && ap.Schema != nil {
		add(v.check(fldPath.Child("additionalProperties"), ap.Schema, childType(t, ap.Schema), childCardinality(s, cardinality), uncorrelatable))
	}
	propsUncorrelatable := uncorrelatable
	if propsUncorrelatable == nil && !mapCorrelatable(s.XMapType) {
		propsUncorrelatable = fldPath
	}
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		p := s.Properties[name]
		add(v.check(fldPath.Child("properties").Key(name), &p, propertyType(t, name, &p), childCardinality(s, cardinality), propsUncorrelatable))
	}
	if s.Items != nil && s.Items.Schema != nil {
		sub := uncorrelatable
		if sub == nil && (s.XListType == nil || *s.XListType != "map") {
			sub = fldPath
		}
		add(v.check(fldPath.Child("items"), s.Items.Schema, childType(t, s.Items.Schema), childCardinality(s, cardinality), sub))
	}
	if len(s.XValidations) == 0 {
		return schemaErrs, celErrs
	}
	rulesPath := fldPath.Child("x-kubernetes-validations")
	schemaErrs = append(schemaErrs, checkRuleFields(rulesPath, s)...)
	if len(schemaErrs) > 0 {
		return schemaErrs, celErrs
	}
	if t == nil {
		celErrs = append(celErrs, field.InternalError(rulesPath, fmt.Errorf("internal error: failed to retrieve type information for x-kubernetes-validations")))
		return schemaErrs, celErrs
	}
	envs, err := newRuleEnvs(v.base, t)
	if err != nil {
		celErrs = append(celErrs, field.InternalError(rulesPath, err))
		return schemaErrs, celErrs
	}
	for i, c := range compileRules(envs, s) {
		rulePath := rulesPath.Index(i)
		cost := expressionCost(c.maxCost, cardinality, t)
		if cost > StaticEstimatedCostLimit {
			celErrs = append(celErrs, field.Forbidden(rulePath.Child("rule"), costErrorMessage("estimated rule cost", cost, StaticEstimatedCostLimit)))
		}
		v.total.observe(rulePath.Child("rule"), cost)
		if c.err != nil {
			celErrs = append(celErrs, field.Invalid(rulePath.Child("rule"), s.XValidations[i], c.err.Error()))
		}
		switch {
		case c.messageErr != nil:
			celErrs = append(celErrs, field.Invalid(rulePath.Child("messageExpression"), s.XValidations[i], c.messageErr.Error()))
		case c.message != nil:
			msgCost := expressionCost(c.messageMax, cardinality, t)
			if msgCost > StaticEstimatedCostLimit {
				celErrs = append(celErrs, field.Forbidden(rulePath.Child("messageExpression"), costErrorMessage("estimated messageExpression cost", msgCost, StaticEstimatedCostLimit)))
			}
			v.total.observe(rulePath.Child("messageExpression"), msgCost)
		}
		if c.usesOldSelf {
			if uncorrelatable != nil {
				celErrs = append(celErrs, field.Invalid(rulePath.Child("rule"), s.XValidations[i].Rule,
					fmt.Sprintf("oldSelf cannot be used on the uncorrelatable portion of the schema within %v", uncorrelatable)))
			}
		} else if s.XValidations[i].OptionalOldSelf != nil {
			celErrs = append(celErrs, field.Invalid(rulePath.Child("optionalOldSelf"), *s.XValidations[i].OptionalOldSelf, "may not be set if oldSelf is not used in rule"))
		}
	}
	return schemaErrs, celErrs
}

// checkRuleFields checks the parts of each rule that need no compiling.
func checkRuleFields(rulesPath *field.Path, s *apiextensionsv1.JSONSchemaProps) field.ErrorList {
	var errs field.ErrorList
	for i, r := range s.XValidations {
		p := rulesPath.Index(i)
		rule, msg := strings.TrimSpace(r.Rule), strings.TrimSpace(r.Message)
		switch {
		case rule == "":
			errs = append(errs, field.Required(p.Child("rule"), "rule is not specified"))
		case r.Message != "" && msg == "":
			errs = append(errs, field.Invalid(p.Child("message"), r.Message, "must be non-empty if specified"))
		case newlines.MatchString(msg):
			errs = append(errs, field.Invalid(p.Child("message"), r.Message, "must not contain line breaks"))
		case newlines.MatchString(rule) && msg == "":
			errs = append(errs, field.Required(p.Child("message"), "message must be specified if rule contains line breaks"))
		}
		if r.MessageExpression != "" && strings.TrimSpace(r.MessageExpression) == "" {
			errs = append(errs, field.Required(p.Child("messageExpression"), "messageExpression must be non-empty if specified"))
		}
		if r.Reason != nil && !slices.Contains(supportedReasons, string(*r.Reason)) {
			errs = append(errs, field.NotSupported(p.Child("reason"), *r.Reason, supportedReasons))
		}
		if r.FieldPath != "" && strings.TrimSpace(r.FieldPath) == "" {
			errs = append(errs, field.Invalid(p.Child("fieldPath"), r.FieldPath, "must be non-empty if specified"))
		}
		if newlines.MatchString(r.FieldPath) {
			errs = append(errs, field.Invalid(p.Child("fieldPath"), r.FieldPath, "must not contain line breaks"))
		}
		if r.FieldPath != "" {
			if _, _, err := validFieldPath(r.FieldPath, s); err != nil {
				errs = append(errs, field.Invalid(p.Child("fieldPath"), r.FieldPath, "must be a valid path"))
			}
		}
	}
	return errs
}

// childType returns the CEL type of list items or map values below t, or
// computes it from the child's schema if t does not have it.
func childType(t *kcel.DeclType, child *apiextensionsv1.JSONSchemaProps) *kcel.DeclType {
	if t != nil && t.ElemType != nil {
		return t.ElemType
	}
	return kcel.SchemaDeclType(rootTypeName, child, child.XEmbeddedResource)
}

// propertyType returns the CEL type of property name below t.
func propertyType(t *kcel.DeclType, name string, p *apiextensionsv1.JSONSchemaProps) *kcel.DeclType {
	if t != nil {
		if esc, ok := kcel.Escape(name); ok {
			if f, ok := t.Fields[esc]; ok {
				return f.Type
			}
			// a property CEL cannot see has no rules checked
			return nil
		}
	}
	return kcel.SchemaDeclType(rootTypeName, p, p.XEmbeddedResource)
}

// childCardinality is how often the children of s can occur: the
// cardinality of s times its maxItems or maxProperties (1 for objects with
// properties), unbounded if either is.
func childCardinality(s *apiextensionsv1.JSONSchemaProps, c *uint64) *uint64 {
	if c == nil {
		return nil
	}
	var n uint64
	switch {
	case s.Type == "object" && s.AdditionalProperties != nil:
		if s.MaxProperties == nil {
			return nil
		}
		n = uint64(max(*s.MaxProperties, 0))
	case s.Type == "array":
		if s.MaxItems == nil {
			return nil
		}
		n = uint64(max(*s.MaxItems, 0))
	default:
		n = 1
	}
	r := mulSaturating(*c, n)
	return &r
}

// expressionCost is the estimated cost of an expression times how often it
// can run: its schema's cardinality, or, without bound, the number of
// smallest values of its type that fit in a request.
func expressionCost(cost uint64, cardinality *uint64, t *kcel.DeclType) uint64 {
	if cardinality != nil {
		return mulSaturating(cost, *cardinality)
	}
	return mulSaturating(cost, uint64(kcel.MaxRequestSizeBytes/(t.MinSerializedSize+1)))
}

func mulSaturating(a, b uint64) uint64 {
	if a == 0 {
		return 0
	}
	if math.MaxUint64/a < b {
		return math.MaxUint64
	}
	return a * b
}

func costErrorMessage(what string, cost, limit uint64) string {
	factor := float64(cost) / float64(limit)
	var f string
	switch {
	case factor > 100:
		f = "more than 100x"
	case factor < 1.5:
		f = fmt.Sprintf("%fx", factor)
	default:
		f = fmt.Sprintf("%.1fx", factor)
	}
	return fmt.Sprintf("%s exceeds budget by factor of %s (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)", what, f)
}

// totalCost sums expression costs over a schema and keeps the (at most four)
// most expensive expressions costing at least 1% of the limit.
type totalCost struct {
	total         uint64
	mostExpensive []pathCost
}

type pathCost struct {
	path *field.Path
	cost uint64
}

func (t *totalCost) observe(p *field.Path, cost uint64) {
	if math.MaxUint64-t.total < cost {
		t.total = math.MaxUint64
	} else {
		t.total += cost
	}
	if cost < StaticEstimatedCRDCostLimit/100 {
		return
	}
	t.mostExpensive = append(t.mostExpensive, pathCost{p, cost})
	sort.SliceStable(t.mostExpensive, func(i, j int) bool { return t.mostExpensive[i].cost > t.mostExpensive[j].cost })
	if len(t.mostExpensive) > 4 {
		t.mostExpensive = t.mostExpensive[:4]
	}
}

// mapCorrelatable reports whether the properties of an object with this
// x-kubernetes-map-type have old values to correlate with: unset, granular
// and atomic maps do; an unknown map type does not.
func mapCorrelatable(mapType *string) bool {
	return mapType == nil || *mapType == "granular" || *mapType == "atomic"
}

func hasRules(s *apiextensionsv1.JSONSchemaProps) bool {
	if s == nil {
		return false
	}
	if len(s.XValidations) > 0 {
		return true
	}
	if s.Items != nil && hasRules(s.Items.Schema) {
		return true
	}
	if s.AdditionalProperties != nil && hasRules(s.AdditionalProperties.Schema) {
		return true
	}
	for _, p := range s.Properties {
		if hasRules(&p) {
			return true
		}
	}
	return false
}
