package celrules

import (
	"fmt"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	kcel "github.com/kplane/kplane/pkg/cel"
)

// The variables a rule sees.
const (
	selfVar    = "self"
	oldSelfVar = "oldSelf"
)

// rootTypeName names the object type of the schema a rule is attached to.
// Kubernetes randomizes it so that rules cannot depend on it; kplane keeps it
// stable, which no rule can observe except through type names in messages.
const rootTypeName = "selfType"

// compiledRule is one x-kubernetes-validations entry, compiled. A rule with
// an empty expression has neither program nor error.
type compiledRule struct {
	rule apiextensionsv1.ValidationRule

	program cel.Program
	// err is why the rule did not compile.
	err error
	// usesOldSelf is true for transition rules.
	usesOldSelf bool
	maxCost     uint64

	message    cel.Program
	messageErr error
	messageMax uint64

	// fieldPath is the rule's fieldPath, normalized; empty if unset or invalid.
	fieldPath string
}

// ruleEnvs are the environments of the rules attached to one schema node.
type ruleEnvs struct {
	env, optionalEnv *cel.Env
	estimator        *kcel.CostEstimator
}

func newRuleEnvs(base *cel.Env, t *kcel.DeclType) (*ruleEnvs, error) {
	provider := cel.CustomTypeProvider(kcel.NewTypeProvider(base.CELTypeProvider(), t))
	env, err := base.Extend(provider, cel.Variable(selfVar, t.CelType()), cel.Variable(oldSelfVar, t.CelType()))
	if err != nil {
		return nil, fmt.Errorf("declaring rule variables: %w", err)
	}
	optionalEnv, err := base.Extend(provider, cel.Variable(selfVar, t.CelType()), cel.Variable(oldSelfVar, types.NewOptionalType(t.CelType())))
	if err != nil {
		return nil, fmt.Errorf("declaring rule variables: %w", err)
	}
	sizes := kcel.SizeEstimator{Vars: map[string]*kcel.DeclType{selfVar: t, oldSelfVar: t}, Default: t}
	return &ruleEnvs{env: env, optionalEnv: optionalEnv, estimator: &kcel.CostEstimator{SizeEstimator: sizes}}, nil
}

// compileRules compiles the rules of schema s, whose CEL type is t.
func compileRules(envs *ruleEnvs, s *apiextensionsv1.JSONSchemaProps) []compiledRule {
	out := make([]compiledRule, len(s.XValidations))
	for i, r := range s.XValidations {
		env := envs.env
		if r.OptionalOldSelf != nil && *r.OptionalOldSelf {
			env = envs.optionalEnv
		}
		out[i] = compileRule(env, envs.estimator, s, r)
	}
	return out
}

func compileRule(env *cel.Env, estimator *kcel.CostEstimator, s *apiextensionsv1.JSONSchemaProps, r apiextensionsv1.ValidationRule) compiledRule {
	c := compiledRule{rule: r}
	if strings.TrimSpace(r.Rule) == "" {
		return c
	}
	ast, iss := env.Compile(r.Rule)
	if iss.Err() != nil {
		c.err = fmt.Errorf("compilation failed: %s", iss.String())
		return c
	}
	if !ast.OutputType().IsExactType(cel.BoolType) {
		c.err = fmt.Errorf("cel expression must evaluate to a bool")
		return c
	}
	for _, ref := range ast.NativeRep().ReferenceMap() {
		if ref.Name == oldSelfVar {
			c.usesOldSelf = true
			break
		}
	}
	prog, err := env.Program(ast)
	if err != nil {
		c.err = fmt.Errorf("program instantiation failed: %w", err)
		return c
	}
	est, err := env.EstimateCost(ast, estimator)
	if err != nil {
		c.err = fmt.Errorf("cost estimation failed: %w", err)
		return c
	}
	c.program, c.maxCost = prog, est.Max

	if r.MessageExpression != "" {
		c.message, c.messageMax, c.messageErr = compileMessage(env, estimator, r.MessageExpression)
	}
	if r.FieldPath != "" {
		if p, _, err := validFieldPath(r.FieldPath, s); err == nil {
			c.fieldPath = p.String()
		}
	}
	return c
}

func compileMessage(env *cel.Env, estimator *kcel.CostEstimator, expr string) (cel.Program, uint64, error) {
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, 0, fmt.Errorf("messageExpression compilation failed: %s", iss.String())
	}
	if !ast.OutputType().IsExactType(cel.StringType) {
		return nil, 0, fmt.Errorf("messageExpression must evaluate to a string")
	}
	prog, err := env.Program(ast)
	if err != nil {
		return nil, 0, fmt.Errorf("messageExpression instantiation failed: %w", err)
	}
	est, err := env.EstimateCost(ast, estimator)
	if err != nil {
		return nil, 0, fmt.Errorf("cost estimation failed for messageExpression: %w", err)
	}
	return prog, est.Max, nil
}
