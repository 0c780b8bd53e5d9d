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
// Validate each time, as kube-apiserver does.
func NewValidator(s *apiextensionsv1.JSONSchemaProps) (*Validator, error) {
	if !hasRules(s) {
		return nil, nil
	}
	base, err := kcel.NewBaseEnv()
	if err != nil {
		return nil, fmt.Errorf("building the CEL environment: %w", err)
	}
	return &Validator{root: buildNode(base, s, kcel.SchemaDeclType(rootTypeName, s, true))}, nil
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
	errs, _ := v.root.validate(ctx, fldPath, obj, old, kcel.RuntimeCostBudget)
	return errs
}

func (n *node) validate(ctx context.Context, fldPath *field.Path, obj, old any, budget int64) (field.ErrorList, int64) {
	if n == nil || obj == nil {
		return nil, budget
	}
	errs, budget := n.validateRules(ctx, fldPath, obj, old, budget)
	if budget < 0 {
		return errs, budget
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
			var childErrs field.ErrorList
			childErrs, budget = child.validate(ctx, path, obj[k], oldV, budget)
			errs = append(errs, childErrs...)
			if budget < 0 {
				return errs, budget
			}
		}
	case []any:
		if n.items == nil {
			return errs, budget
		}
		oldList, _ := old.([]any)
		var oldByKey map[string]any
		if len(n.mapKeys) > 0 && len(oldList) > 0 {
			oldByKey = make(map[string]any, len(oldList))
			for _, o := range oldList {
				if k, ok := listMapKey(n.mapKeys, o); ok {
					if _, dup := oldByKey[k]; !dup {
						oldByKey[k] = o
					}
				}
			}
		}
		for i, item := range obj {
			var oldItem any
			if k, ok := listMapKey(n.mapKeys, item); ok && oldByKey != nil {
				oldItem = oldByKey[k]
			}
			var childErrs field.ErrorList
			childErrs, budget = n.items.validate(ctx, fldPath.Index(i), item, oldItem, budget)
			errs = append(errs, childErrs...)
			if budget < 0 {
				return errs, budget
			}
		}
	}
	return errs, budget
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

func (n *node) validateRules(ctx context.Context, fldPath *field.Path, obj, old any, budget int64) (field.ErrorList, int64) {
	var errs field.ErrorList
	if n.compileErr != nil {
		return field.ErrorList{field.Invalid(fldPath, n.typ, fmt.Sprintf("rule compiler initialization error: %v", n.compileErr))}, budget
	}
	if len(n.rules) == 0 {
		return nil, budget
	}
	if budget <= 0 {
		return field.ErrorList{field.Invalid(fldPath, n.typ, outOfBudget)}, -1
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
		if cost > uint64(budget) {
			return append(errs, field.Invalid(fldPath, n.typ, outOfBudget)), -1
		}
		budget -= int64(cost)
		if err != nil {
			msg := err.Error()
			switch {
			case strings.HasPrefix(msg, "no such overload"):
				errs = append(errs, field.Invalid(fldPath, n.typ, fmt.Sprintf("'%v': call arguments did not match a supported operator, function or macro signature for rule: %v", err, ruleErrorString(c.rule))))
			case strings.HasPrefix(msg, "operation cancelled: actual cost limit exceeded"):
				return append(errs, field.Invalid(fldPath, n.typ, fmt.Sprintf("'%v': no further validation rules will be run due to call cost exceeds limit for rule: %v", err, ruleErrorString(c.rule)))), -1
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
		detail, ok := "", false
		if c.message != nil {
			var msgErr *messageError
			detail, budget, msgErr = evalMessage(ctx, c, ruleAct, budget)
			switch {
			case msgErr == nil:
				ok = true
			case msgErr.fatal:
				return append(errs, field.Invalid(path, n.typ, msgErr.msg)), -1
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
		errs = append(errs, fieldErrorForReason(path, value, detail, c.rule.Reason))
	}
	return errs, budget
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

// evalMessage evaluates a rule's messageExpression and returns the message
// and the remaining budget.
func evalMessage(ctx context.Context, c compiledRule, act interpreter.Activation, budget int64) (string, int64, *messageError) {
	result, details, err := c.message.ContextEval(ctx, act)
	cost := actualCost(details)
	if cost > uint64(budget) {
		return "", -1, &messageError{msg: "messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run", fatal: true}
	}
	budget -= int64(cost)
	if err != nil {
		if strings.HasPrefix(err.Error(), "operation cancelled: actual cost limit exceeded") {
			return "", -1, &messageError{msg: fmt.Sprintf("no further validation rules will be run due to call cost exceeds limit for messageExpression: %q", c.rule.MessageExpression), fatal: true}
		}
		return "", budget, &messageError{msg: "messageExpression evaluation failed due to: " + err.Error()}
	}
	s, ok := result.Value().(string)
	if !ok {
		return "", budget, &messageError{msg: "messageExpression failed to convert to string"}
	}
	s = strings.TrimSpace(s)
	switch {
	case len(s) > kcel.MaxMessageExpressionSizeBytes:
		return "", budget, &messageError{msg: fmt.Sprintf("messageExpression beyond allowable length of %d", kcel.MaxMessageExpressionSizeBytes)}
	case strings.Contains(s, "\n"):
		return "", budget, &messageError{msg: "messageExpression should not contain line breaks"}
	case s == "":
		return "", budget, &messageError{msg: "messageExpression should evaluate to a non-empty string"}
	}
	return s, budget, nil
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
