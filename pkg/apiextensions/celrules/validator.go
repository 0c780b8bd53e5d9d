package celrules

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kcel "github.com/kplane/kplane/pkg/cel"
)

// Validator evaluates the x-kubernetes-validations rules of a schema on
// custom resources. It is immutable and safe for concurrent use.
type Validator struct {
	root *node
	// schema is the root schema, which ratcheting walks to correlate values.
	schema *apiextensionsv1.JSONSchemaProps
}

// node holds the compiled rules of one schema node and the nodes below it
// that have rules.
type node struct {
	// typ is the schema type, reported as the value of errors about objects
	// and arrays.
	typ      string
	declType *kcel.DeclType
	rules    []compiledRule
	// compileErr is why the node's rules could not be compiled at all.
	compileErr  error
	usesOldSelf bool

	properties map[string]*node
	additional *node
	items      *node
	// mapKeys are the x-kubernetes-list-map-keys of a list-type=map list,
	// which correlate its items with the old ones.
	mapKeys []string
	// uncorrelatable is set for objects of an unknown x-kubernetes-map-type,
	// whose properties have no old values.
	uncorrelatable bool
}

// NewValidator compiles the rules of schema s, the root of a custom
// resource. It returns nil, nil if s has no rules. Rules that do not compile
// (which ValidateRules rejects when the CRD is written) are reported by
// Validate each time, as kube-apiserver does. The Validator keeps s, which
// must not be modified afterwards.
func NewValidator(s *apiextensionsv1.JSONSchemaProps) (*Validator, error) {
	if !hasRules(s) {
		return nil, nil
	}
	base, err := kcel.NewBaseEnv()
	if err != nil {
		return nil, fmt.Errorf("building the CEL environment: %w", err)
	}
	return &Validator{root: buildNode(base, s, kcel.SchemaDeclType(rootTypeName, s, true)), schema: s}, nil
}

func buildNode(base *cel.Env, s *apiextensionsv1.JSONSchemaProps, t *kcel.DeclType) *node {
	if !hasRules(s) {
		return nil
	}
	n := &node{typ: s.Type, declType: t, uncorrelatable: !mapCorrelatable(s.XMapType)}
	if len(s.XValidations) > 0 {
		if t == nil {
			n.compileErr = fmt.Errorf("failed to convert to declType for CEL validation rules")
		} else if envs, err := newRuleEnvs(base, t); err != nil {
			n.compileErr = err
		} else {
			n.rules = compileRules(envs, s)
			for _, r := range n.rules {
				n.usesOldSelf = n.usesOldSelf || r.usesOldSelf
			}
		}
	}
	for name, p := range s.Properties {
		if c := buildNode(base, &p, propertyType(t, name, &p)); c != nil {
			if n.properties == nil {
				n.properties = map[string]*node{}
			}
			n.properties[name] = c
		}
	}
	if ap := s.AdditionalProperties; ap != nil && ap.Schema != nil {
		n.additional = buildNode(base, ap.Schema, childType(t, ap.Schema))
	}
	if s.Items != nil && s.Items.Schema != nil {
		n.items = buildNode(base, s.Items.Schema, childType(t, s.Items.Schema))
		if s.XListType != nil && *s.XListType == "map" {
			n.mapKeys = s.XListMapKeys
		}
	}
	return n
}

// Validate evaluates the rules on obj, a JSON-decoded custom resource at
// fldPath, against old, its previous state (nil on create). Transition
// rules (those using oldSelf) run only where an old value correlates: same
// property, same map key, same list-type=map keys; with optionalOldSelf they
// also run without one, seeing optional.none(). All rules share
// kcel.RuntimeCostBudget; when it runs out, evaluation stops with an error.
// Validate does not modify obj or old. It returns nil when v is nil.
func (v *Validator) Validate(ctx context.Context, fldPath *field.Path, obj, old any) field.ErrorList {
	if v == nil {
		return nil
	}
	r := &run{budget: kcel.RuntimeCostBudget}
	return v.root.validate(ctx, r, fldPath, obj, old, ratchet{})
}

// ValidateRatcheting is Validate for updates as kube-apiserver performs them
// (CRDValidationRatcheting): a failed rule that does not use oldSelf, on a
// value that is unchanged from its correlated old value, is returned as a
// warning instead of an error, so objects stay updatable after their
// schema's rules tighten. A value is unchanged when it equals its old value
// property by property, list-type=map lists item by key, other lists as a
// whole. apiVersion and kind at the root are never ratcheted.
func (v *Validator) ValidateRatcheting(ctx context.Context, fldPath *field.Path, obj, old any) (errs field.ErrorList, warnings []string) {
	if v == nil {
		return nil, nil
	}
	r := &run{budget: kcel.RuntimeCostBudget}
	rt := ratchet{current: &correlation{schema: v.schema, value: obj, old: old}}
	errs = v.root.validate(ctx, r, fldPath, obj, old, rt)
	return errs, r.warnings
}

// run is the state of one validation: the cost budget left (negative once
// exhausted, which stops everything) and the warnings collected.
type run struct {
	budget   int64
	warnings []string
}

func (n *node) validate(ctx context.Context, r *run, fldPath *field.Path, obj, old any, rt ratchet) field.ErrorList {
	obj, old = untypedNil(obj), untypedNil(old)
	if n == nil || obj == nil {
		return nil
	}
	errs := n.validateRules(ctx, r, fldPath, obj, old, rt)
	if r.budget < 0 {
		return errs
	}
	switch obj := obj.(type) {
	case map[string]any:
		oldMap, _ := old.(map[string]any)
		// sorted, so that errors come in a stable order
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			child := n.properties[k]
			if child == nil {
				child = n.additional
			}
			if child == nil {
				continue
			}
			var oldV any
			if oldMap != nil && !n.uncorrelatable {
				oldV = oldMap[k]
			}
			path := fldPath.Child(k)
			if n.properties == nil {
				path = fldPath.Key(k)
			}
			errs = append(errs, child.validate(ctx, r, path, obj[k], oldV, rt.key(k))...)
			if r.budget < 0 {
				return errs
			}
		}
	case []any:
		if n.items == nil {
			return errs
		}
		oldList, _ := old.([]any)
		oldByKey := indexByKey(n.mapKeys, oldList)
		for i, item := range obj {
			var oldItem any
			if k, ok := listMapKey(n.mapKeys, item); ok && oldByKey != nil {
				oldItem = oldByKey[k]
			}
			errs = append(errs, n.items.validate(ctx, r, fldPath.Index(i), item, oldItem, rt.index(i))...)
			if r.budget < 0 {
				return errs
			}
		}
	}
	return errs
}

// untypedNil turns nil maps and slices into nil, so that a caller's
// map[string]any(nil) old object counts as no old object.
func untypedNil(v any) any {
	switch v := v.(type) {
	case map[string]any:
		if v == nil {
			return nil
		}
	case []any:
		if v == nil {
			return nil
		}
	}
	return v
}

// indexByKey maps the composite keys of list-type=map items to the first
// item with that key; nil without keys or items.
func indexByKey(keys []string, items []any) map[string]any {
	if len(keys) == 0 || len(items) == 0 {
		return nil
	}
	byKey := make(map[string]any, len(items))
	for _, o := range items {
		if k, ok := listMapKey(keys, o); ok {
			if _, dup := byKey[k]; !dup {
				byKey[k] = o
			}
		}
	}
	return byKey
}

// listMapKey returns the composite key of a list-type=map item: the values
// of its key fields, which must all be set and scalar.
func listMapKey(keys []string, item any) (string, bool) {
	if len(keys) == 0 {
		return "", false
	}
	m, ok := item.(map[string]any)
	if !ok {
		return "", false
	}
	var b strings.Builder
	for _, k := range keys {
		v, ok := m[k]
		if !ok {
			return "", false
		}
		switch v.(type) {
		case bool, float64, int64, string:
		default:
			return "", false
		}
		fmt.Fprintf(&b, "%T:%v\x00", v, v)
	}
	return b.String(), true
}

func (n *node) validateRules(ctx context.Context, r *run, fldPath *field.Path, obj, old any, rt ratchet) field.ErrorList {
	var errs field.ErrorList
	if n.compileErr != nil {
		return field.ErrorList{field.Invalid(fldPath, n.typ, fmt.Sprintf("rule compiler initialization error: %v", n.compileErr))}
	}
	if len(n.rules) == 0 {
		return nil
	}
	if r.budget <= 0 {
		r.budget = -1
		return field.ErrorList{field.Invalid(fldPath, n.typ, outOfBudget)}
	}
	self := n.declType.Value(obj)
	act := &activation{self: self}
	optAct := &activation{self: self, hasOldSelf: true, oldSelf: types.OptionalNone}
	if old != nil && n.usesOldSelf {
		act.oldSelf, act.hasOldSelf = n.declType.Value(old), true
		optAct.oldSelf = types.OptionalOf(act.oldSelf)
	}
	for _, c := range n.rules {
		if c.err != nil {
			errs = append(errs, field.Invalid(fldPath, n.typ, fmt.Sprintf("rule compile error: %v", c.err)))
			continue
		}
		if c.program == nil {
			continue
		}
		optional := c.rule.OptionalOldSelf != nil && *c.rule.OptionalOldSelf
		if c.usesOldSelf && old == nil && !optional {
			continue // a transition rule with nothing to compare against
		}
		ruleAct := act
		if optional {
			ruleAct = optAct
		}
		result, details, err := c.program.ContextEval(ctx, ruleAct)
		cost := actualCost(details)
		if cost > uint64(r.budget) {
			r.budget = -1
			return append(errs, field.Invalid(fldPath, n.typ, outOfBudget))
		}
		r.budget -= int64(cost)
		if err != nil {
			msg := err.Error()
			switch {
			case strings.HasPrefix(msg, "no such overload"):
				errs = append(errs, field.Invalid(fldPath, n.typ, fmt.Sprintf("'%v': call arguments did not match a supported operator, function or macro signature for rule: %v", err, ruleErrorString(c.rule))))
			case strings.HasPrefix(msg, "operation cancelled: actual cost limit exceeded"):
				r.budget = -1
				return append(errs, field.Invalid(fldPath, n.typ, fmt.Sprintf("'%v': no further validation rules will be run due to call cost exceeds limit for rule: %v", err, ruleErrorString(c.rule))))
			default:
				errs = append(errs, field.Invalid(fldPath, n.typ, fmt.Sprintf("%v evaluating rule: %v", err, ruleErrorString(c.rule))))
			}
			continue
		}
		if result == types.True {
			continue
		}
		path := fldPath
		if c.fieldPath != "" {
			path = path.Child(c.fieldPath)
		}
		// Errors of rules that cannot see the old value are ratcheted:
		// reported as warnings when the value did not change.
		report := func(e *field.Error) {
			if !c.usesOldSelf && rt.unchanged() {
				r.warnings = append(r.warnings, e.Error())
				return
			}
			errs = append(errs, e)
		}
		detail, ok := "", false
		if c.message != nil {
			// Kubernetes evaluates messages with the rule's activation
			// minus optionalOldSelf; kplane uses the rule's own, so
			// messages of optionalOldSelf rules can read oldSelf too.
			msg, msgErr := evalMessage(ctx, r, c, ruleAct)
			switch {
			case msgErr == nil:
				detail, ok = msg, true
			case msgErr.fatal:
				report(field.Invalid(path, n.typ, msgErr.msg))
				return errs
			}
			// other messageExpression failures fall back to the message
		}
		if !ok {
			detail = ruleMessageOrDefault(c.rule)
		}
		var value any = obj
		if n.typ == "object" || n.typ == "array" {
			value = field.OmitValueType{}
		}
		report(fieldErrorForReason(path, value, detail, c.rule.Reason))
	}
	return errs
}

const outOfBudget = "validation failed due to running out of cost budget, no further validation rules will be run"

// actualCost is the cost an evaluation reports; an evaluation that cannot
// report one is treated as exceeding any budget.
func actualCost(details *cel.EvalDetails) uint64 {
	if details == nil {
		return math.MaxUint64
	}
	if c := details.ActualCost(); c != nil {
		return *c
	}
	return math.MaxUint64
}

type messageError struct {
	msg string
	// fatal errors stop all further evaluation.
	fatal bool
}

// evalMessage evaluates a rule's messageExpression, charging r's budget.
func evalMessage(ctx context.Context, r *run, c compiledRule, act interpreter.Activation) (string, *messageError) {
	result, details, err := c.message.ContextEval(ctx, act)
	cost := actualCost(details)
	if cost > uint64(r.budget) {
		r.budget = -1
		return "", &messageError{msg: "messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run", fatal: true}
	}
	r.budget -= int64(cost)
	if err != nil {
		if strings.HasPrefix(err.Error(), "operation cancelled: actual cost limit exceeded") {
			r.budget = -1
			return "", &messageError{msg: fmt.Sprintf("no further validation rules will be run due to call cost exceeds limit for messageExpression: %q", c.rule.MessageExpression), fatal: true}
		}
		return "", &messageError{msg: "messageExpression evaluation failed due to: " + err.Error()}
	}
	s, ok := result.Value().(string)
	if !ok {
		return "", &messageError{msg: "messageExpression failed to convert to string"}
	}
	s = strings.TrimSpace(s)
	switch {
	case len(s) > kcel.MaxMessageExpressionSizeBytes:
		return "", &messageError{msg: fmt.Sprintf("messageExpression beyond allowable length of %d", kcel.MaxMessageExpressionSizeBytes)}
	case strings.Contains(s, "\n"):
		return "", &messageError{msg: "messageExpression should not contain line breaks"}
	case s == "":
		return "", &messageError{msg: "messageExpression should evaluate to a non-empty string"}
	}
	return s, nil
}

func fieldErrorForReason(p *field.Path, value any, detail string, reason *apiextensionsv1.FieldValueErrorReason) *field.Error {
	if reason == nil {
		return field.Invalid(p, value, detail)
	}
	switch *reason {
	case apiextensionsv1.FieldValueForbidden:
		return field.Forbidden(p, detail)
	case apiextensionsv1.FieldValueRequired:
		return field.Required(p, detail)
	case apiextensionsv1.FieldValueDuplicate:
		return field.Duplicate(p, value)
	}
	return field.Invalid(p, value, detail)
}

func ruleMessageOrDefault(r apiextensionsv1.ValidationRule) string {
	if r.Message == "" {
		return "failed rule: " + ruleErrorString(r)
	}
	return strings.TrimSpace(r.Message)
}

func ruleErrorString(r apiextensionsv1.ValidationRule) string {
	if r.Message != "" {
		return strings.TrimSpace(r.Message)
	}
	return strings.TrimSpace(r.Rule)
}

// activation binds self and, when there is one, oldSelf.
type activation struct {
	self, oldSelf ref.Val
	hasOldSelf    bool
}

var _ interpreter.Activation = (*activation)(nil)

func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case selfVar:
		return a.self, true
	case oldSelfVar:
		return a.oldSelf, a.hasOldSelf
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }
